"""A writer that resumes a session must notice bytes another writer appended between its read of the file
and its own first append, not only between two of its appends: the real Claude Code CLI 2.1.328 resuming the
file by its path (it takes neither our lock nor, given a path, its live-session check) while our recorder is
adopted but has not written yet. Before, the first append was not checked at all: our rows went in after the
CLI's, parented to the leaf we had read, so the CLI's turn was left on a branch resume no longer reaches."""

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


def test_a_cli_appending_before_our_first_append_stops_it(
    claude: Path, model: ScriptedModelServer, tmp_path: Path
) -> None:
    shop, config = tmp_path / "shop", tmp_path / "config"
    shop.mkdir()
    first = SessionRecorder.create(config / "projects", str(shop))
    first.record_prompt("first prompt, ours")
    first.close()
    ours = SessionRecorder.adopt(first.path)  # admitted, the chain read: the turn has not written yet
    done = run_claude(
        ["CLI-WROTE-THIS", "--resume", str(first.path), *FLAGS],
        cwd=shop,
        config_dir=config,
        base_url=model.base_url,
        timeout=120,
        claude=claude,
        allowed_tools=None,
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
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
