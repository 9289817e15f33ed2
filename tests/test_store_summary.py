"""Our store summary fold gives the Agent SDK's `fold_session_summary` data, batch after batch,
on every transcript of the three real corpora and on the edge cases of its rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import fold_session_summary

from storage.store_summary import fold_summary

CORPORA = Path(__file__).resolve().parent / "corpus"
KEY = {"project_key": "p", "session_id": "s"}


def both(batches: list[list[dict[str, Any]]]) -> tuple[dict[str, Any], dict[str, Any]]:
    ours: dict[str, Any] | None = None
    sdk = None
    for batch in batches:
        ours = fold_summary(ours, batch)
        sdk = fold_session_summary(sdk, KEY, batch)
    assert sdk is not None and ours is not None
    return ours, sdk["data"]


def transcripts() -> list[Path]:
    return sorted(p for p in CORPORA.rglob("*.jsonl") if p.name != "api-requests.jsonl")


def test_every_corpus_transcript_folds_as_the_sdk_folds() -> None:
    files = transcripts()
    assert len(files) >= 15
    for path in files:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        if not rows:  # the empty files 2.0.x leaves: nothing is mirrored, nothing to fold
            continue
        for size in (1, 4, len(rows) or 1):
            ours, sdk = both([rows[i : i + size] for i in range(0, len(rows), size)])
            assert ours == sdk, (path, size)


def user(text: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": text}, **extra}


CASES = {
    "command then prompt": [user("<command-name>/init</command-name> x"), user("real one")],
    "command only": [user("<command-name>/review</command-name>"), user("<command-name>/other</command-name>")],
    "skipped kinds": [user("<local-command-stdout>x"), user("[Request interrupted by user]"), user("  ok  ")],
    "meta and compact and tool results": [
        user("meta", isMeta=True),
        user("sum", isCompactSummary=True),
        user([{"type": "tool_result", "tool_use_id": "t", "content": "x"}, {"type": "text", "text": "no"}]),
        user([{"type": "image"}, {"type": "text", "text": "line\nbreak"}]),
    ],
    "long prompt": [user("x" * 199 + " " + "y" * 50)],
    "tags": [{"type": "tag", "tag": "a"}, {"type": "tag", "tag": ""}, {"type": "tag", "tag": "b"}, {"type": "tag"}],
    "last wins and set once": [
        {"type": "x", "timestamp": "bad", "cwd": ""},
        {"type": "x", "timestamp": "2026-01-02T03:04:05.678Z", "cwd": "/a", "gitBranch": "m", "isSidechain": True},
        {"type": "x", "timestamp": "2026-01-02T03:04:06+01:00", "cwd": "/b", "gitBranch": "n", "customTitle": "T"},
        {"type": "x", "aiTitle": "A", "lastPrompt": "L", "summary": "S", "customTitle": 3},
    ],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_cases_fold_as_the_sdk_folds(name: str) -> None:
    rows = CASES[name]
    for split in range(1, len(rows) + 1):
        ours, sdk = both([rows[:split], rows[split:]])
        assert ours == sdk, name
    assert ours  # every case derives something
