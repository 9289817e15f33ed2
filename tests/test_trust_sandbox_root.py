"""The sandbox a resumed turn takes from the session itself (`sessions/runTurn` without `cwd`): the
`cwd` recorded in the transcript, which is data (a session pulled from a store or copied from
elsewhere carries whatever its writer put there). A recorded cwd that is the config home
(credentials, every transcript), inside it, a folder holding it, or a folder holding the home folder is too wide
to be implied, like `/` and the home folder. A folder holding the config home was accepted once: with the config
home outside the home folder (`CLAUDE_CONFIG_DIR=/data/claude`, or a projects folder named explicitly) a session
recording `cwd: /data` gave the model the OAuth token. The real server over stdio, the scripted model on
loopback."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from rawlsp import RawServer

from storage.recorder import SessionRecorder

SECRET = "sk-ant-oat01-NOT-FOR-THE-MODEL"
INVALID_PARAMS = -32602


def _credentials(config: Path) -> Path:
    credentials = config / ".credentials.json"
    credentials.write_text(json.dumps({"claudeAiOauth": {"accessToken": SECRET}}))
    credentials.chmod(0o600)
    return credentials


def _assert_refused(projects: Path, cwd: Path, credentials: Path) -> None:
    """A session recording `cwd`, resumed without a cwd and told to read `credentials`: refused as unsafe, the
    secret nowhere, the transcript untouched."""
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


@pytest.mark.parametrize("recorded", ["config home", "projects folder", "parent of home"])
def test_a_recorded_cwd_too_wide_to_imply_is_refused(private_home: Path, recorded: str) -> None:
    config = Path(os.environ["CLAUDE_CONFIG_DIR"])
    projects = config / "projects"
    projects.mkdir(parents=True)
    credentials = _credentials(config)
    cwd = {"config home": config, "projects folder": projects, "parent of home": private_home.parent}[recorded]
    _assert_refused(projects, cwd, credentials)


@pytest.mark.parametrize("held", ["config home", "projects folder's parent"])
def test_a_recorded_cwd_holding_the_config_home_is_refused(
    private_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held: str
) -> None:
    data = tmp_path / "data"
    config = data / "claude"
    if held == "config home":
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    projects = config / "projects"
    projects.mkdir(parents=True)
    _assert_refused(projects, data, _credentials(config))
