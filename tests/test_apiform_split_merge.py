"""Two prompts that an unanswered tool call and a system message stood between (a shape the chain
property test found): the real CLI 2.1.328 merges the prompts into one user message and sends the
system message after it, and so do we."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from oracle import condensed
from realcli import find_claude, run_claude
from scripted_api import ScriptedModelServer

from storage.paths import project_folder_name
from storage.resume import resume

SENT = [  # what the real CLI 2.1.328 sent before its new prompt (run by the live test below)
    {"role": "user", "content": [{"type": "text", "text": "prompt 5\n"}, {"type": "text", "text": "prompt 10"}]},
    {"role": "system", "content": [{"type": "text", "text": "x"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "No response requested."}]},
]


def _rows(sid: str, cwd: str) -> list[dict[str, Any]]:
    def row(n: int, kind: str, parent: str | None, **body: Any) -> dict[str, Any]:
        stamp = f"2026-01-01T00:00:{n:02d}.000Z"
        return {"parentUuid": parent, "type": kind, "uuid": f"u{n}", "isSidechain": False, "timestamp": stamp,
                "sessionId": sid, "cwd": cwd, **body}  # fmt: skip

    def prompt(n: int, parent: str | None) -> dict[str, Any]:
        return row(n, "user", parent, message={"role": "user", "content": f"prompt {n}"})

    reminder = [{"content": "<system-reminder>x</system-reminder>"}]
    call = {"role": "assistant", "id": "m0", "content": [{"type": "tool_use", "id": "t9", "name": "Read", "input": {}}]}
    return [
        row(0, "attachment", None, attachment={"type": "date"}, rendered=reminder, renderedRole="system"),
        *[prompt(n, None) for n in range(1, 5)],
        prompt(5, "u0"),
        prompt(6, None),
        prompt(7, None),
        row(8, "progress", None),
        row(9, "assistant", "u5", message=call),  # never answered: dropped, the prompts around it meet
        prompt(10, "nowhere"),  # a missing parent: the 5 s fallback takes u9
    ]


def write(projects: Path, cwd: Path) -> tuple[str, Path]:
    sid = str(uuid.uuid4())
    path = projects / project_folder_name(str(cwd)) / f"{sid}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in _rows(sid, str(cwd))))
    return sid, path


def test_prompts_merge_across_a_dropped_call_and_a_system_message(tmp_path: Path) -> None:
    _, path = write(tmp_path / "projects", tmp_path / "work")
    assert condensed(resume(path, effort_statement=True).messages) == SENT


def test_the_real_cli_sends_the_same(tmp_path: Path) -> None:
    if find_claude() is None:
        pytest.skip("REAL CLI NOT AVAILABLE: run scripts/setup.d/claude-cli.sh")
    cwd = tmp_path / "work"
    cwd.mkdir()
    sid, path = write(tmp_path / "config" / "projects", cwd)
    ours = condensed(resume(path, effort_statement=True).messages)
    with ScriptedModelServer() as model:
        done = run_claude(
            [f"ORACLE {sid}", "--resume", sid, "--system-prompt", "x", "--tools", "Read"],
            cwd=cwd,
            config_dir=tmp_path / "config",
            base_url=model.base_url,
            allowed_tools=None,
        )
        assert done.returncode == 0, done.stderr
        sent = condensed(next(r for r in model.requests if r.get("sessionId") == sid)["messages"])
    assert sent[: len(ours)] == ours == SENT
    assert sent[len(ours)]["content"] == [{"type": "text", "text": f"ORACLE {sid}"}]
