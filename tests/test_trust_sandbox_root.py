"""The sandbox a resumed turn takes from the session itself (`sessions/runTurn` without `cwd`): the
`cwd` recorded in the transcript, which is data (a session pulled from a store or copied from
elsewhere carries whatever its writer put there). A recorded cwd that is the config home
(credentials, every transcript), inside it, or a folder holding the home folder is too wide to be
implied, like `/` and the home folder. The real server over stdio, the scripted model on loopback."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from rawlsp import RawServer

from storage.recorder import SessionRecorder

SECRET = "sk-ant-oat01-NOT-FOR-THE-MODEL"
INVALID_PARAMS = -32602


@pytest.mark.parametrize("recorded", ["config home", "projects folder", "parent of home"])
def test_a_recorded_cwd_too_wide_to_imply_is_refused(private_home: Path, recorded: str) -> None:
    config = Path(os.environ["CLAUDE_CONFIG_DIR"])
    projects = config / "projects"
    projects.mkdir(parents=True)
    credentials = config / ".credentials.json"
    credentials.write_text(json.dumps({"claudeAiOauth": {"accessToken": SECRET}}))
    credentials.chmod(0o600)
    cwd = {"config home": config, "projects folder": projects, "parent of home": private_home.parent}[recorded]
    rec = SessionRecorder.create(projects, str(cwd))
    rec.record_prompt("hello")
    rec.close()
    before = rec.path.read_bytes()
    with RawServer() as server:
        server.initialize(projects, watch=False)
        reply = server.call(
            "sessions/runTurn",
            {"sessionId": rec.session_id, "prompt": f"READ {credentials}", "provider": "anthropic"},
            timeout=60,
        )
    assert SECRET not in json.dumps(reply) and SECRET not in rec.path.read_text()
    error = reply.get("error") or {}
    assert error.get("code") == INVALID_PARAMS and error.get("data", {}).get("reason") == "unsafe", reply
    assert "Pass cwd explicitly" in error.get("message", "")
    assert rec.path.read_bytes() == before
