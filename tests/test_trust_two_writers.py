"""Two writers in one session: the real Claude Code CLI 2.1.328 resumes a session by its file path
(`claude -p ... --resume <file>`) while our recorder holds it. The CLI takes neither our lock nor, when
given a path, its own live-session check, so it appends. Our recorder must notice and write nothing
more, so the file stays the two writers' rows as each wrote them and the CLI still resumes it. That holds
from the moment our writer read the file, not only between two of its appends: the CLI appending between our
resume's read and our first append once had our rows parented to the leaf we had read, leaving the CLI's turn on
a branch resume no longer reaches.
The CLI runs offline against the scripted Messages API on loopback; it skips only when the CLI
binary cannot be found, and says so loudly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from realcli import run_claude
from scripted_api import ScriptedModelServer

from storage.errors import InUse
from storage.recorder import SessionRecorder
from storage.resume import resume

pytestmark = [pytest.mark.realcli]

FLAGS = ["--bare", "--system-prompt", "You are driven by a scripted test model.", "--tools", "Read"]


def cli_resume(claude: Path, model: ScriptedModelServer, config: Path, shop: Path, target: str, prompt: str) -> str:
    done = run_claude(
        [prompt, "--resume", target, *FLAGS],
        cwd=shop,
        config_dir=config,
        base_url=model.base_url,
        timeout=120,
        claude=claude,
        allowed_tools=None,
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    return done.stdout


def test_a_cli_appending_during_our_turn_stops_our_writes(
    claude: Path, model: ScriptedModelServer, tmp_path: Path
) -> None:
    shop, config = tmp_path / "shop", tmp_path / "config"
    shop.mkdir()
    rec = SessionRecorder.create(config / "projects", str(shop))
    rec.record_prompt("first prompt, ours")
    rec.flush()
    cli_resume(claude, model, config, shop, str(rec.path), "CLI-WROTE-THIS")
    theirs = rec.path.read_bytes()
    assert b"CLI-WROTE-THIS" in theirs, "the CLI did not write into the session"
    rec.record_prompt("OURS-AFTER-THE-CLI")
    with pytest.raises(InUse) as refused:
        rec.flush()
    assert "another process" in str(refused.value)
    with pytest.raises(InUse):
        rec.close()  # the metadata it re-appends at the end is refused too; the session is released
    assert rec.path.read_bytes() == theirs
    assert all(json.loads(line) for line in theirs.splitlines())
    assert "echo: AFTER" in cli_resume(claude, model, config, shop, rec.session_id, "AFTER")


def test_a_cli_appending_before_our_first_append_stops_it(
    claude: Path, model: ScriptedModelServer, tmp_path: Path
) -> None:
    shop, config = tmp_path / "shop", tmp_path / "config"
    shop.mkdir()
    first = SessionRecorder.create(config / "projects", str(shop))
    first.record_prompt("first prompt, ours")
    first.close()
    ours = SessionRecorder.adopt(first.path)  # admitted, the chain read: the turn has not written yet
    cli_resume(claude, model, config, shop, str(first.path), "CLI-WROTE-THIS")
    theirs = first.path.read_bytes()
    assert b"CLI-WROTE-THIS" in theirs, "the CLI did not write into the session"
    ours.record_prompt("OURS-ON-A-STALE-LEAF")
    with pytest.raises(InUse) as refused:
        ours.flush()
    assert "another process" in str(refused.value)
    with pytest.raises(InUse):
        ours.close()
    assert first.path.read_bytes() == theirs
    assert all(json.loads(line) for line in theirs.splitlines())
    sent = json.dumps(resume(first.path).messages)
    assert "CLI-WROTE-THIS" in sent
