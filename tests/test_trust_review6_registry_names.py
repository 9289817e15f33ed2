"""The real CLI's registry of live sessions is read under every name of the projects folder.

The CLI registers a running session in `<its config home>/sessions/<pid>.json` (`storage.livesession`), the only
sign of it we can read: it takes no lock. A writer of ours looked in `sessions/` beside the projects folder as it
was named, only. With `~/.claude/projects` a link to another disk (`config/projects -> disk/projects`), a writer
given the real name (`--projects-dir disk/projects`, an editor set to it) looked in `disk/sessions`, found nothing,
and appended into the session the CLI of `config` was running (a rename, a tag, a whole turn); so did one given the
link while a CLI whose config home is `disk` ran it. Each case failed before (the rename exited 0 and wrote)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from turnproc import new_session, session_lsp


def _register_cli(config: Path, pid: int, sid: str, work: Path) -> None:
    """The record the real CLI 2.1.328 keeps for a running session (`<config>/sessions/<pid>.json`)."""
    folder = config / "sessions"
    folder.mkdir(mode=0o700, exist_ok=True)
    record = {"pid": pid, "sessionId": sid, "cwd": str(work), "startedAt": 1, "kind": "interactive"}
    (folder / f"{pid}.json").write_text(json.dumps(record | {"entrypoint": "cli"}))


@pytest.mark.parametrize(("through", "cli_home"), [("real", "config"), ("link", "disk")])
def test_a_live_cli_refuses_writers_through_the_other_name(
    tmp_path: Path, work: Path, through: str, cli_home: str
) -> None:
    config, disk = tmp_path / "config", tmp_path / "disk"
    (disk / "projects").mkdir(parents=True)
    config.mkdir()
    (config / "projects").symlink_to(disk / "projects")
    sid, path = new_session(config / "projects", work)
    projects = config / "projects" if through == "link" else disk / "projects"
    live = subprocess.Popen(["sleep", "300"])  # stands for the running CLI process: a real live pid
    try:
        _register_cli(tmp_path / cli_home, live.pid, sid, work)
        before = path.read_bytes()
        for args in (
            ["rename", sid, "REFUSED TITLE"],
            ["tag", sid, "refused-tag"],
            ["turn", "--resume", sid, "--cwd", str(work), "--provider", "anthropic", "REFUSED TURN"],
        ):
            done = session_lsp(*args, "--projects-dir", str(projects), config=config)
            assert done.returncode == 2 and f"pid {live.pid}" in done.stderr, (args[0], done.returncode, done.stderr)
        assert path.read_bytes() == before, "a writer appended into the session the CLI is running"
    finally:
        live.kill()
        live.wait()
