"""Costs of sessions written by older CLIs (tests/corpus/versions): 0.2.109 and 1.0.0 wrote each reply's own
`costUSD` on its row (1.0.0 writes 0 on the replies a resumed copy repeats, 0.2.109 their first cost again).
The cost we compute from a reply's tokens and our prices must be that figure, and a folder's total each
reply's once."""

from __future__ import annotations

import json

import pytest
from conftest import TESTS

from server.cli import main
from storage.usage import file_responses

ROOT = TESTS / "corpus" / "versions"


def recorded_costs(writer: str) -> list[tuple[str | None, float | None, float]]:
    """(message id, our cost, the CLI's costUSD) of each file's responses whose first row carries a costUSD."""
    found = []
    for path in sorted((ROOT / f"claude-code-{writer}" / "projects").glob("*/*.jsonl")):
        data = path.read_bytes()
        for response in file_responses(path):
            row = json.loads(data[response.offset :].split(b"\n", 1)[0])
            if "costUSD" in row:
                found.append((response.message_id, response.cost_usd, row["costUSD"]))
    return found


@pytest.mark.parametrize(("writer", "billed", "copies"), [("0.2.109", 39, 0), ("1.0.0", 21, 24)])
def test_cost_is_what_the_old_cli_recorded(
    writer: str, billed: int, copies: int, capsys: pytest.CaptureFixture[str]
) -> None:
    found = recorded_costs(writer)
    charged = [(ours, theirs) for _, ours, theirs in found if theirs > 0]
    assert (len(charged), len(found) - len(charged)) == (billed, copies)
    assert [ours for ours, _ in charged] == pytest.approx([theirs for _, theirs in charged], rel=1e-12, abs=1e-12)
    once: dict[str | None, float] = {}
    for message_id, _, theirs in found:
        once[message_id] = max(once.get(message_id, 0.0), theirs)
    assert main(["usage", "--projects-dir", str(ROOT / f"claude-code-{writer}" / "projects"), "--json"]) == 0
    total = json.loads(capsys.readouterr().out)["total"]
    assert total["responses"] == len(once)
    assert total["costUSD"] == pytest.approx(sum(once.values()), abs=1e-6)
