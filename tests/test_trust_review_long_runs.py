"""Long runs of rows the API form merges. The CLI sends consecutive user rows as one message; we joined them one by
one, copying (and re-sorting, tool results first) everything joined so far each time, and looked each dropped reply's
neighbours up message by message: quadratic. A crafted file of 100,000 user rows (27 MB; a parentUuid cycle, so the
chain is all of them) kept `chain` busy for over 300 s (killed; a file of 4,000 such rows took 1.6 s); 100,000 user
rows each holding a text and a tool result, or 100,000 prompts each answered by a blank reply, for over 60 s (killed).
Now each join costs the rows it adds (`storage.apiform._join_into`): 1.9 s, 3.6 s and 7.0 s here.

Real `session-lsp chain` processes on real files, each given a liveness bound (a hang detector, not a speed
requirement)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from turnproc import ROOT, cli_env

N = 100_000
LIVENESS = 240.0
NO_RESPONSE = "No response requested."


def _row(sid: str, kind: str, uid: str, parent: str | None, content: Any, i: int) -> bytes:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message |= {"model": "claude-opus-5-5", "id": f"msg_{i}", "type": "message", "usage": {"input_tokens": 1}}
    row = {"type": kind, "uuid": uid, "parentUuid": parent, "sessionId": sid, "cwd": "/p", "message": message}
    return json.dumps({**row, "timestamp": "2025-01-01T00:00:00.000Z"}).encode() + b"\n"


def _write(projects: Path, rows: list[tuple[str, Any]], *, cycle: bool = False) -> str:
    """A session of `rows` (kind, content), each the parent of the next; with `cycle` the first row's parent is the
    last one (no root, no leaf)."""
    sid = str(uuid.uuid4())
    ids = [str(uuid.uuid4()) for _ in rows]
    folder = projects / "-p"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{sid}.jsonl", "wb") as fh:
        for i, (kind, content) in enumerate(rows):
            parent = ids[i - 1] if i else (ids[-1] if cycle else None)
            fh.write(_row(sid, kind, ids[i], parent, content, i))
    return sid


def _chain(projects: Path, sid: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "server.cli", "chain", sid, "--json", "--projects-dir", str(projects)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=cli_env(projects.parent),
        timeout=LIVENESS,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    messages: list[dict[str, Any]] = json.loads(done.stdout)["messages"]
    assert messages[-1] == {"role": "assistant", "content": [{"type": "text", "text": NO_RESPONSE}]}, messages[-1]
    return messages


def test_a_cycle_of_user_rows_resumes_as_one_message(projects: Path) -> None:
    sid = _write(projects, [("user", f"prompt {i}") for i in range(N)], cycle=True)
    users = [m for m in _chain(projects, sid) if m["role"] == "user"]
    assert len(users) == 1 and len(users[0]["content"]) == N, [len(m["content"]) for m in users]


def test_user_rows_of_text_and_results_resume_with_the_results_first(projects: Path) -> None:
    call = [{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/p/x"}}]
    both = [{"type": "text", "text": "x"}, {"type": "tool_result", "tool_use_id": "toolu_1", "content": "r"}]
    sid = _write(projects, [("user", "go"), ("assistant", call), *[("user", both) for _ in range(N)]])
    content = [m for m in _chain(projects, sid) if m["role"] == "user"][-1]["content"]
    kinds = [b["type"] for b in content]
    assert kinds == ["tool_result"] * N + ["text"] * N, (kinds[:3], len(kinds))


def test_prompts_answered_by_blank_replies_resume_as_one_message(projects: Path) -> None:
    blank = [{"type": "text", "text": " "}]
    sid = _write(projects, [row for i in range(N) for row in (("user", f"p{i}"), ("assistant", blank))])
    users = [m for m in _chain(projects, sid) if m["role"] == "user"]
    assert len(users) == 1 and len(users[0]["content"]) == N, [len(m["content"]) for m in users]
