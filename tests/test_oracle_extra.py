"""The third real-CLI corpus (tests/corpus/extra): the API-form rules, compared in full text.

Bare and full resumes of a compacted session, and turns killed mid-tool and after a tool result
(each also as the file stood right after the kill, compared with what the CLI sent on resuming it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import TESTS
from oracle import exact_differences, load_requests

from storage.apiform import INTERRUPTED, NO_RESPONSE, api_messages
from storage.chain import build_chain
from storage.transcript import Transcript

ROOT = TESTS / "corpus" / "extra"
REQUESTS = load_requests(ROOT / "api-requests.jsonl")
ORACLES = json.loads((ROOT / "oracles.json").read_text())
KILLED = sorted((ROOT / "killed").glob("*.jsonl"))


def form(path: Path, *, bare: bool) -> list[dict]:
    return api_messages(path, build_chain(Transcript.load(path)), bare=bare, effort_statement=True)


@pytest.mark.parametrize("rel", sorted(ORACLES), ids=lambda r: ORACLES[r]["sessionId"][:8])
def test_final_file_matches_oracle(rel: str) -> None:
    info = ORACLES[rel]
    ours = form(ROOT / rel, bare=info["bare"])
    assert ours[-1]["content"][0]["text"] == f"echo: ORACLE {info['sessionId']}"
    assert exact_differences(ours[:-1], REQUESTS[info["request"]]["messages"]) == []


@pytest.mark.parametrize("path", KILLED, ids=lambda p: p.stem[:8])
def test_killed_file_matches_what_resume_sent(path: Path) -> None:
    """The file as the kill left it: the resume request is its API form plus the new prompt."""
    info = next(i for i in ORACLES.values() if i["sessionId"] == path.stem)
    sent = REQUESTS[info["request"]]["messages"]
    ours = form(path, bare=info["bare"])
    assert exact_differences(ours, sent[:-1]) == []
    assert ours[-1]["content"] == [{"type": "text", "text": NO_RESPONSE}]


def test_killed_mid_tool_gets_interrupted_result() -> None:
    path = ROOT / "killed" / "e3333333-3333-4333-8333-333333333333.jsonl"
    ours = form(path, bare=True)
    result = ours[-2]["content"][0]
    assert result["type"] == "tool_result" and result["is_error"] is True
    assert result["content"] == INTERRUPTED


def test_bare_and_full_differ_only_by_attachments() -> None:
    bare = form(ROOT / "projects/-tmp-slsp-extra-work/e2222222-2222-4222-8222-222222222222.jsonl", bare=True)
    full = form(ROOT / "projects/-tmp-slsp-extra-work/e2222222-2222-4222-8222-222222222222.jsonl", bare=False)
    assert len(full) > len(bare)
    assert [m for m in bare if m["role"] == "system"] == [{"role": "system", "content": []}]
