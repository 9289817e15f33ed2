"""The language server run as `nobody` (tests/nobody.py) over a copy of the corpus it owns, one session file of
which it may not read: the rest is listed, the unreadable file is said in the log, asking for its chain is a
clear error, and the server goes on and ends cleanly."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import CORPUS
from nobody import cli_command, cli_env, give, shared_dir
from rawlsp import LIVENESS, RawServer

LOCKED = "-Users-me-other/1c99f271-c426-49f7-9ae1-2b8728ab22c4.jsonl"


@pytest.fixture
def shared() -> Iterator[Path]:
    yield from shared_dir()


def test_the_server_lists_around_an_unreadable_session(shared: Path) -> None:
    home, projects = shared / "home", shared / "projects"
    home.mkdir()
    give(home)
    shutil.copytree(CORPUS / "projects", projects)
    give(projects)
    locked = projects / LOCKED
    locked.chmod(0o000)
    options = {"projectsDir": str(projects), "watch": False}
    with RawServer("-v", env=cli_env(home), command=cli_command()) as server:
        reply = server.call("initialize", {"processId": None, "capabilities": {}, "initializationOptions": options})
        assert "result" in reply, reply
        server.notify("initialized", {})
        listed = server.call("sessions/list", {})["result"]["sessions"]
        assert len(listed) == 3 and locked.stem not in {s["sessionId"] for s in listed}
        asked = server.call(
            "workspace/executeCommand", {"command": "sessions/chain", "arguments": [{"path": str(locked)}]}
        )
        assert "Permission denied" in asked["error"]["message"] and str(locked) in asked["error"]["message"], asked
        assert len(server.call("sessions/list", {})["result"]["sessions"]) == 3  # still serving
        assert server.call("shutdown")["result"] is None
        server.notify("exit")
        rc, _ = server.wait_exit(LIVENESS)
        assert rc == 0, server.stderr[-2000:]
        assert f"skipped {locked}: Permission denied".encode() in server.stderr, server.stderr[-2000:]  # the log
