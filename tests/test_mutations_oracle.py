"""Damaged copies of real transcripts (tests/mutations.py) read exactly as the real CLI 2.1.328 read them.

The recorded oracle (tests/corpus/mutations) holds what the CLI sent on resuming each damaged copy, or
what it printed when it refused one; the copies are rebuilt here from their source, byte for byte.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import TESTS
from mutations import mutate
from oracle import exact_differences, load_requests

from storage.errors import NotATranscript
from storage.paths import project_folder_name
from storage.resume import resume

ROOT = TESTS / "corpus" / "mutations"
CASES: dict[str, dict[str, Any]] = json.loads((ROOT / "cases.json").read_text(encoding="utf-8"))
REQUESTS = load_requests(ROOT / "api-requests.jsonl")


def case_path(case: dict[str, Any], projects: Path) -> Path:
    """Where the damaged copy lay in the CLI's projects folder (its cwd's project folder)."""
    return projects / project_folder_name(case["cwd"]) / f"{case['sessionId']}.jsonl"


def rebuild(case: dict[str, Any], projects: Path) -> Path:
    """The damaged copy the CLI resumed, at the place it had in the CLI's projects folder."""
    source = TESTS / "corpus" / case["source"]
    out = mutate(source.read_bytes(), source.stem, case["mutation"])
    assert out is not None
    assert (hashlib.sha256(out.data).hexdigest(), len(out.data)) == (case["sha256"], case["size"])
    path = case_path(case, projects)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(out.data)
    return path


@pytest.mark.parametrize("key", sorted(CASES))
def test_we_read_the_damaged_copy_as_the_cli_did(key: str, tmp_path: Path) -> None:
    case = CASES[key]
    path = rebuild(case, tmp_path / "projects")
    if case["request"] is None:
        assert "No conversation found" in case["refused"]
        with pytest.raises(NotATranscript):
            resume(path, bare=case["bare"], effort_statement=True)
        return
    ours = resume(path, bare=case["bare"], effort_statement=True).messages
    assert exact_differences(ours, REQUESTS[case["request"]]) == []
