"""As a new user would: our `anthropic` provider, against a Messages API we run, continues a
session the real CLI wrote (a plain turn, then two parallel reads). What we send equals what the
real CLI sends for the same file and prompts, and the real CLI resuming our file afterwards
carries both turns exactly as our reader says it will."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from oracle import differences
from realcli import find_claude, run_claude
from scripted_api import ScriptedModelServer

from server.agent.loop import run_turn
from server.agent.request import TurnRequest
from storage.resume import resume

pytestmark = [pytest.mark.realcli, pytest.mark.slow]

GEN = Path(__file__).parent / "corpus" / "generated" / "projects" / "-tmp-slsp-corpus-shop"
SID = "22222222-2222-4222-8222-222222222222"
CWD = Path("/tmp/slsp-corpus/shop")  # the session's recorded working directory


def _norm(messages: list[dict]) -> list[dict]:
    """The CLI sends a lone text as a string; compare it as one text block."""
    return [
        {
            "role": m["role"],
            "content": [{"type": "text", "text": m["content"]}] if isinstance(m["content"], str) else m["content"],
        }
        for m in messages
    ]


def _plain(messages: list[dict]) -> list[dict]:
    """The conversation without system messages and system reminders."""
    out: list[dict] = []
    for m in messages:
        if m["role"] == "system":
            continue
        blocks = [
            b
            for b in m["content"]
            if not (b.get("type") == "text" and b.get("text", "").startswith("<system-reminder>"))
        ]
        if out and out[-1]["role"] == m["role"]:
            out[-1]["content"] += blocks
        elif blocks:
            out.append({"role": m["role"], "content": blocks})
    return out


def _copy(root: Path) -> Path:
    folder = root / "config" / "projects" / GEN.name
    folder.mkdir(parents=True)
    shutil.copy(GEN / f"{SID}.jsonl", folder)
    shutil.copytree(GEN / SID, folder / SID)
    return folder / f"{SID}.jsonl"


@pytest.mark.skipif(find_claude() is None, reason="REAL CLI NOT AVAILABLE: run scripts/setup.d/claude-cli.sh")
def test_our_turns_match_the_cli_and_the_cli_resumes_them(tmp_path: Path) -> None:
    (CWD / "src").mkdir(parents=True, exist_ok=True)
    (CWD / "src" / "a.txt").write_text("alpha file\n")
    (CWD / "src" / "b.txt").write_text("beta file\n")
    prompts = ["plain question", f"PAR {CWD}/src/a.txt {CWD}/src/b.txt"]
    with ScriptedModelServer() as srv:
        _copy(tmp_path / "cli")
        ours = _copy(tmp_path / "ours")
        cli_sent, our_sent = [], []
        for prompt in prompts:
            n = len(srv.requests)
            assert (
                run_claude(
                    [prompt, "--resume", SID],
                    cwd=str(CWD),
                    config_dir=tmp_path / "cli" / "config",
                    base_url=srv.base_url,
                ).returncode
                == 0
            )
            cli_sent.append(_norm(srv.requests[n]["messages"]))
            n = len(srv.requests)
            run_turn(
                TurnRequest(
                    prompt=prompt,
                    session=str(ours),
                    mode="resume",
                    provider="anthropic",
                    projects_dir=ours.parent.parent,
                    base_url=srv.base_url,
                    env={"ANTHROPIC_API_KEY": "sk-ant-test"},
                )
            )
            our_sent.append(_norm(srv.requests[n]["messages"]))
        # turn 1, from the same file: the same history, system messages included; the new prompt's
        # message differs only by the CLI's reminders of its new process (date, environment)
        head = len(our_sent[0]) - 1
        assert differences(our_sent[0][:head], cli_sent[0][:head]) == []
        assert our_sent[0][head]["content"][-1]["text"] == cli_sent[0][head]["content"][-1]["text"]
        # turn 2: the CLI's file now also holds those reminders of its turn 1; the rest is the same
        assert differences(_plain(our_sent[1]), _plain(cli_sent[1])) == []
        # both parallel calls were answered with the files' contents
        results = [
            b
            for m in our_sent[1] + _norm(resume(ours).messages)
            for b in m["content"]
            if b.get("type") == "tool_result"
        ]
        text = json.dumps(results)
        assert "alpha file" in text and "beta file" in text
        # the real CLI resumes our file and carries both turns as our reader rebuilds them
        n = len(srv.requests)
        assert (
            run_claude(
                ["ORACLE now", "--resume", SID],
                cwd=str(CWD),
                config_dir=tmp_path / "ours" / "config",
                base_url=srv.base_url,
            ).returncode
            == 0
        )
        sent = _norm(srv.requests[n]["messages"])
        mine = _norm(resume(ours, effort_statement=True).messages)
        assert differences(mine[: len(sent) - 1], sent[:-1]) == []
        carried = json.dumps(sent)
        assert "plain question" in carried and "alpha file" in carried and "beta file" in carried
