"""The first index's gate for quick answers (`server.lsp.giveway`): it waits while one is computed, within a
budget."""

from __future__ import annotations

import threading

from server.lsp.giveway import GiveWay


def test_no_answer_being_computed_costs_no_budget() -> None:
    gate = GiveWay(budget=1.0)
    assert gate.wait() is True and gate.left == 1.0


def test_a_waiting_index_goes_on_when_the_answer_is_done() -> None:
    gate = GiveWay(budget=600)
    answering, release, waited = threading.Event(), threading.Event(), []

    def answer() -> None:
        with gate.answering(), gate.answering():  # nested answers: the index waits for the outer one too
            answering.set()
            release.wait()

    t = threading.Thread(target=answer)
    t.start()
    answering.wait()
    index = threading.Thread(target=lambda: waited.append(gate.wait()))
    index.start()
    assert waited == []  # still waiting while the answer is computed
    release.set()
    index.join()
    t.join()
    assert waited == [True] and 0 < gate.left < 600


def test_the_budget_bounds_the_waiting_in_all() -> None:
    gate = GiveWay(budget=0.05)
    with gate.answering():
        assert gate.wait() is False  # gave up when the budget ran out
        assert gate.left == 0.0
        assert gate.wait() is False  # spent: no more waiting


def test_an_answer_that_fails_still_lets_the_index_go_on() -> None:
    gate = GiveWay(budget=1.0)
    try:
        with gate.answering():
            raise ValueError("bad parameter")
    except ValueError:
        pass
    assert gate.wait() is True and gate.left == 1.0
