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
# After a compaction the CLI 2.1.328 leaves a re-announced `date` attachment out of the request;
# we have not found its rule yet and still send it as a system message (see README, known gaps).


@pytest.mark.parametrize("rel", sorted(ORACLES), ids=lambda r: ORACLES[r]["sessionId"][:8])
def test_chain_matches_oracle(rel: str) -> None:
    info = ORACLES[rel]
    resumed = resume(ROOT / rel)
    ours = resumed.messages
    assert ours[-1]["content"][0]["text"] == f"echo: ORACLE {info['sessionId']}"
    # this corpus scrubbed system message texts to nothing: compare their presence only
    diffs = differences(ours[:-1], REQUESTS[info["request"]]["messages"], system_content=False)
    if diffs and resumed.chain.boundary is not None:
        # the only difference is the one extra system message
        without = [m for i, m in enumerate(ours[:-1]) if not (m["role"] == "system" and i > 1)]
        assert differences(without, REQUESTS[info["request"]]["messages"], system_content=False) == []
        pytest.xfail("post-compaction date attachment: see README known gaps")
    assert diffs == []


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
