"""The second real-CLI corpus (tests/corpus/generated): compactions, parallel calls, a subagent,
a fork, --continue, a killed turn, long and non-ASCII working directories, titles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import TESTS
from oracle import differences, load_requests

from storage.lookup import find_by_title, find_continue
from storage.paths import candidate_project_dirs
from storage.resume import resume

ROOT = TESTS / "corpus" / "generated"
REQUESTS = load_requests(ROOT / "api-requests.jsonl")
ORACLES = json.loads((ROOT / "oracles.json").read_text())
FULL_SESSIONS = {"22222222-2222-4222-8222-222222222222"}
"""Resumed without --bare; every other session ran (and was resumed) with --bare, which leaves
attachments (the `date` reminder among them) out of the request."""


@pytest.mark.parametrize("rel", sorted(ORACLES), ids=lambda r: ORACLES[r]["sessionId"][:8])
def test_chain_matches_oracle(rel: str) -> None:
    info = ORACLES[rel]
    bare = info["sessionId"] not in FULL_SESSIONS
    resumed = resume(ROOT / rel, bare=bare, effort_statement=True)
    ours = resumed.messages
    assert ours[-1]["content"][0]["text"] == f"echo: ORACLE {info['sessionId']}"
    # this corpus scrubbed system texts: [] stayed [], any text became one placeholder block
    assert differences(ours[:-1], REQUESTS[info["request"]]["messages"]) == []


def test_long_cwd_folder_found_by_cwd() -> None:
    rel = next(r for r, i in ORACLES.items() if i["sessionId"].startswith("4444"))
    cwd = ORACLES[rel]["cwd"]
    dirs = candidate_project_dirs(ROOT / "projects", cwd)
    assert [d.name for d in dirs] == [Path(rel).parent.name]


def test_title_and_continue_lookups() -> None:
    path = find_by_title(ROOT / "projects", "revue du café")
    assert path.stem.startswith("6666")
    # --continue in the shop folder: the most recently modified file, not a sidechain one
    shop = next(i["cwd"] for i in ORACLES.values() if i["cwd"].endswith("/shop"))
    latest = find_continue(ROOT / "projects", shop)
    assert latest.parent.name == "-tmp-slsp-corpus-shop"
