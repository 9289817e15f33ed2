"""`workspace/diagnostic` over a cold folder of a few hundred sessions, on the real server over stdio:
it is computed off the event loop, so a hover sent after it is answered first, `$/cancelRequest`
cancels it, and `shutdown` is answered before it. Order is asserted, not time;
the only bound is the hang detector LIVENESS."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rawlsp import LIVENESS, RawServer

from bench.make_projects import make_projects

REQUEST_CANCELLED = -32800
INDEXING = "session-lsp/indexing"


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 150 MB in 500+ session files (each test gets a fresh, cold cache from conftest)."""
    return make_projects(tmp_path_factory.mktemp("big"), total_mb=150, seed=7)


@pytest.fixture
def server(big: Path) -> Iterator[RawServer]:
    with RawServer() as s:
        s.initialize(big, watch=False)
        deadline = time.monotonic() + 120
        while not any(v.get("kind") == "end" for v in s.progress_of(INDEXING)):
            assert time.monotonic() < deadline, "the first index never ended"
            time.sleep(0.05)
        yield s


def hover_params(big: Path) -> dict[str, object]:
    small = min(big.rglob("*.jsonl"), key=lambda f: f.stat().st_size)
    return {"textDocument": {"uri": small.as_uri()}, "position": {"line": 0, "character": 0}}


def test_hover_is_answered_while_the_workspace_diagnostic_runs(server: RawServer, big: Path) -> None:
    diagnostic = server.request("workspace/diagnostic", {"previousResultIds": []})
    hover = server.request("textDocument/hover", hover_params(big))
    assert "result" in server.answer(hover, timeout=LIVENESS)
    report = server.answer(diagnostic, timeout=120)
    assert len(report["result"]["items"]) > 10  # real work: the generated folder has damaged files
    print(f"answers in order {server.arrivals}; {len(report['result']['items'])} files with diagnostics")
    assert server.arrivals.index(hover) < server.arrivals.index(diagnostic)


def test_cancel_request_cancels_the_workspace_diagnostic(server: RawServer, big: Path) -> None:
    diagnostic = server.request("workspace/diagnostic", {"previousResultIds": []})
    server.notify("$/cancelRequest", {"id": diagnostic})
    reply = server.answer(diagnostic, timeout=LIVENESS)
    assert reply.get("error", {}).get("code") == REQUEST_CANCELLED, reply
    assert "result" in server.call("textDocument/hover", hover_params(big), timeout=LIVENESS)


def test_shutdown_and_exit_end_the_process_during_the_workspace_diagnostic(server: RawServer) -> None:
    diagnostic = server.request("workspace/diagnostic", {"previousResultIds": []})
    shutdown = server.request("shutdown")
    assert server.answer(shutdown, timeout=LIVENESS).get("result") is None
    server.notify("exit")
    rc, waited = server.wait_exit(LIVENESS)
    print(f"exit status {rc} after {waited:.2f} s; answers in order {server.arrivals}")
    assert rc == 0
    order = server.arrivals
    assert diagnostic not in order or order.index(shutdown) < order.index(diagnostic)


def test_hover_is_answered_while_sessions_list_reads_the_folder(server: RawServer, big: Path) -> None:
    listing = server.request("sessions/list", {})
    hover = server.request("textDocument/hover", hover_params(big))
    assert "result" in server.answer(hover, timeout=LIVENESS)
    sessions = server.answer(listing, timeout=120)["result"]["sessions"]
    print(f"answers in order {server.arrivals}; {len(sessions)} sessions listed")
    assert len(sessions) > 100
    assert server.arrivals.index(hover) < server.arrivals.index(listing)


def test_hover_is_answered_while_document_symbols_of_the_biggest_file_are_built(server: RawServer, big: Path) -> None:
    biggest = max(big.rglob("*.jsonl"), key=lambda f: f.stat().st_size)
    symbols = server.request("textDocument/documentSymbol", {"textDocument": {"uri": biggest.as_uri()}})
    hover = server.request("textDocument/hover", hover_params(big))
    assert "result" in server.answer(hover, timeout=LIVENESS)
    outline = server.answer(symbols, timeout=120)["result"]
    print(f"answers in order {server.arrivals}; {len(outline)} turns in {biggest.stat().st_size >> 20} MiB")
    assert len(outline) > 10
    assert server.arrivals.index(hover) < server.arrivals.index(symbols)
