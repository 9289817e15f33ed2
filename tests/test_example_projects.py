"""The bundled example (examples/projects, made by scripts/make_example.py): sessions the real CLI
wrote, with no test data left, every path in the neutral /home/dev form, and each session resumed
by the real CLI 2.1.328 exactly as we read it."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from oracle import condensed, exact_differences
from realcli import run_claude
from scripted_api import ScriptedModelServer

from storage.apiform import api_messages
from storage.chain import build_chain
from storage.sessions import list_sessions
from storage.transcript import Transcript

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "projects"
BUG_HUNT = "5b0e8c1a-3d7f-4a92-b6e4-1c9d2f7a8e35"
AUDIT = "c7a41e96-0f28-4b3d-9e5a-62d8b1f4c09e"


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _tool_calls(path: Path) -> list[str]:
    names = []
    for row in _rows(path):
        content = (row.get("message") or {}).get("content") if row.get("type") == "assistant" else None
        names += [b["name"] for b in content or [] if isinstance(b, dict) and b.get("type") == "tool_use"]
    return names


def test_no_test_data_is_left_in_the_example() -> None:
    files = [p for p in EXAMPLE.parent.rglob("*") if p.is_file()]
    assert len(files) >= 5
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert "ORACLE" not in text and "[scrubbed" not in text, path
        assert "/tmp/slsp-example" not in text and "-tmp-slsp-example" not in text, path


def test_the_example_holds_a_bug_hunt_a_compaction_a_subagent_and_a_fork() -> None:
    sessions = {s.session_id: s for s in list_sessions(EXAMPLE)}
    assert len(sessions) == 3
    assert {s.cwd for s in sessions.values()} == {"/home/dev/ledger"}
    assert {s.git_branch for s in sessions.values()} == {"main"}
    bug = sessions[BUG_HUNT]
    assert _tool_calls(bug.path) == ["Grep", "Read", "Bash", "Edit", "Bash", "Read", "Edit", "Bash"]
    assert sum(1 for r in _rows(bug.path) if r.get("subtype") == "compact_boundary") == 1
    audit = sessions[AUDIT]
    assert _tool_calls(audit.path) == ["Agent"]
    assert [s["agentType"] for s in audit.subagents] == ["general-purpose"]
    assert _tool_calls(Path(audit.subagents[0]["path"])) == ["Grep", "Read"]
    (fork,) = (s for s in sessions.values() if s.session_id not in (BUG_HUNT, AUDIT))
    assert fork.forked_from == {"sessionId": AUDIT, "messageUuid": None}
    assert _tool_calls(fork.path) == ["Agent", "Read", "Edit", "Edit", "Bash"]


@pytest.mark.realcli
@pytest.mark.slow
@pytest.mark.parametrize("which", ["bug-hunt", "audit", "fork"])
def test_the_real_cli_resumes_each_bundled_session_as_we_read_it(
    claude: Path, scripted_model: ScriptedModelServer, tmp_path: Path, which: str
) -> None:
    """`claude -p PROMPT --resume FILE` on a copy: the request it sends starts with our API form of
    the file (full texts, tool ids and results, system messages), then the new prompt."""
    config = tmp_path / "config"
    shutil.copytree(EXAMPLE, config / "projects")
    files = {p.stem: p for p in (config / "projects" / "-home-dev-ledger").glob("*.jsonl")}
    forks = [sid for sid in files if sid not in (BUG_HUNT, AUDIT)]
    session = {"bug-hunt": BUG_HUNT, "audit": AUDIT, "fork": forks[0] if len(forks) == 1 else ""}[which]
    path = files[session]
    ours = api_messages(path, build_chain(Transcript.load(path)), bare=False, effort_statement=True)
    first = len(scripted_model.requests)
    prompt = f"resume check {session}"
    done = run_claude(
        [prompt, "--resume", str(path)],
        cwd=tmp_path,
        config_dir=config,
        base_url=scripted_model.base_url,
        claude=claude,
        allowed_tools=None,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"echo: {prompt}"
    (sent,) = [r for r in scripted_model.requests[first:] if r["sessionId"] == session]
    assert len(ours) > 4
    assert exact_differences(ours, condensed(sent["messages"])[: len(ours)]) == []
    rest = sent["messages"][len(ours)]
    assert rest["role"] == "user" and prompt in json.dumps(rest["content"])


def test_the_story_answers_each_prompt_turn_by_turn_and_notes_what_it_cannot() -> None:
    sys.path.insert(0, str(EXAMPLE.parent.parent / "scripts"))
    import example_story as story

    unscripted: list[str] = []
    plan = story.planner(Path("/w"), unscripted)
    prompt = {"role": "user", "content": [{"type": "text", "text": "<system-reminder>x</system-reminder>"},
                                          {"type": "text", "text": story.BUG_PROMPT}]}  # fmt: skip
    _, first = plan([prompt])
    assert [b.get("name") for b in first if b["type"] == "tool_use"] == ["Grep"]
    reply = {"role": "assistant", "content": first}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ledger/money.py"}]}
    _, second = plan([prompt, reply, result])
    assert second[0]["input"] == {"file_path": "/w/ledger/money.py"}
    compact = {"role": "user", "content": [{"type": "text", "text": story.COMPACT_INSTRUCTION + " Summarize."}]}
    assert plan([prompt, reply, result, compact])[1][0]["text"] == story.SUMMARY
    assert unscripted == []
    plan([{"role": "user", "content": "something the story never says"}])
    assert unscripted == ["something the story never says"]
