"""For every session of the real CLI's corpus, our chain equals what the CLI sent on resume."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CORPUS
from oracle import differences, oracle_requests

from storage.resume import resume

SESSIONS = sorted(p for p in (CORPUS / "projects").glob("*/*.jsonl"))
ORACLES = oracle_requests(CORPUS / "api-requests.jsonl")


def test_every_session_has_an_oracle() -> None:
    assert len(SESSIONS) == 4
    assert {p.stem for p in SESSIONS} <= set(ORACLES)


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.stem[:8])
def test_chain_matches_oracle(path: Path) -> None:
    resumed = resume(path, effort_statement=True)
    ours = resumed.messages
    # The ORACLE request is the file's final chain less its last reply.
    assert ours[-1]["role"] == "assistant"
    assert ours[-1]["content"][0]["text"] == f"echo: ORACLE {path.stem}"
    assert differences(ours[:-1], ORACLES[path.stem]["messages"]) == []


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.stem[:8])
def test_chain_command_json(path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "server.cli", "chain", str(path), "--json", "--projects-dir", str(path.parent.parent)],
        capture_output=True,
        text=True,
        check=True,
    )
    data = json.loads(out.stdout)
    assert data["sessionId"] == path.stem
    assert data["path"] == str(path)
    assert data["uuids"] and data["leafUuid"] == data["uuids"][-1]
    assert differences(data["messages"][:-1], ORACLES[path.stem]["messages"]) == []


def test_parallel_results_recovered() -> None:
    resumed = resume(
        CORPUS / "projects/-Users-me-shop/11111111-1111-4111-8111-111111111111.jsonl", effort_statement=True
    )
    # result of the first parallel call hangs off a row that is not on the parent walk
    assert "1aaa446d-0ec9-4fd6-a45d-c9d2df2c63a2" in resumed.chain.uuids or any(
        r.uuid.startswith("1aaa446d") for r in resumed.chain.recovered
    )
    merged = [m for m in resumed.messages if m["role"] == "assistant" and len(m["content"]) == 3]
    assert [b["type"] for b in merged[0]["content"]] == ["text", "tool_use", "tool_use"]


def test_compaction_stops_at_boundary_and_relinks_preserved() -> None:
    resumed = resume(CORPUS / "projects/-Users-me-shop/22222222-2222-4222-8222-222222222222.jsonl")
    chain = resumed.chain
    assert chain.stop == "compact-boundary"
    assert chain.rows[0].is_compact_boundary
    assert chain.rows[0].logical_parent == "b48ac1ff-c821-4d79-8442-4d123ec7d704"
    assert [r.uuid[:8] for r in chain.preserved] == ["b48ac1ff"]
    assert chain.rows[2].uuid == "b48ac1ff-c821-4d79-8442-4d123ec7d704"
    # nothing from before the boundary except the preserved row
    assert "f5dfa711" not in {u[:8] for u in chain.uuids}


def test_fork_session_shares_uuids_with_source() -> None:
    src = resume(CORPUS / "projects/-Users-me-shop/11111111-1111-4111-8111-111111111111.jsonl", effort_statement=True)
    fork = resume(CORPUS / "projects/-Users-me-shop/d864acd2-d28b-43ce-b430-2208a10860fe.jsonl")
    shared = set(src.chain.uuids) & set(fork.chain.uuids)
    assert len(shared) >= 23
