"""Our record of a session we write is found by a real CLI of the projects folder's other name.

The real CLI refuses to resume a session a live record of its registry names ("running in the background"), and reads
only its own config home's registry. With `config/projects` (the person's config home) a link to `disk/projects`, a
writer of ours given the real name registered in `disk/sessions` alone, so `claude --resume <id>` run with `config` as its config home resumed the
session we were writing, and both wrote into it (before the fix: the CLI exited 0 and appended its turn). Our record is
now also made in the registry of every other config home of the folder that has one (`storage.livesession.LiveMark`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from realcli import run_claude

from storage.livesession import live_records
from storage.recorder import SessionRecorder

pytestmark = [pytest.mark.realcli, pytest.mark.slow]

FLAGS = ["--bare", "--system-prompt", "Scripted test model. Be brief.", "--tools", "Read"]


def test_a_cli_of_the_other_name_refuses_the_session_we_write(
    claude: Path, model: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, disk, shop = tmp_path / "config", tmp_path / "disk", tmp_path / "shop"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))  # the person's config home, whose projects is the link
    (disk / "projects").mkdir(parents=True)
    (config / "sessions").mkdir(parents=True, mode=0o700)  # a CLI ran with this config home before
    (config / "projects").symlink_to(disk / "projects")
    shop.mkdir()
    rec = SessionRecorder.create(disk / "projects", str(shop))  # ours, given the real name
    try:
        rec.record_prompt("hello")
        rec.flush()
        before = rec.path.read_bytes()
        mine = [r for r in live_records(config) if r.session_id == rec.session_id]
        assert mine and mine[0].pid == os.getpid(), "no record of ours in the other config home's registry"
        done = run_claude(
            ["hi", "--resume", rec.session_id, *FLAGS],
            cwd=shop,
            config_dir=config,
            base_url=model.base_url,
            timeout=120,
            claude=claude,
            allowed_tools=None,
        )
        assert done.returncode != 0 and "running in the background" in done.stderr + done.stdout, (
            done.returncode,
            done.stdout[-500:],
            done.stderr[-500:],
        )
        assert rec.path.read_bytes() == before, "the CLI wrote into the session we hold"
    finally:
        rec.close()
    assert not [r for r in live_records(config) if r.session_id == rec.session_id], "our record outlived the writer"
    assert not [r for r in live_records(disk) if r.session_id == rec.session_id]
