"""A resumed turn's implied sandbox (the `cwd` recorded in the transcript, which is data) may not be a folder that
holds the config home: its tools would read the credentials and every transcript, as from the config home itself.
Before, only the config home, a folder inside it, the home folder and a folder holding the home folder were
refused, so with the config home outside the home folder (`CLAUDE_CONFIG_DIR=/data/claude`, or a projects folder
named explicitly) a session recording `cwd: /data` gave the model the OAuth token. The real server over stdio,
the scripted model on loopback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rawlsp import RawServer

from storage.recorder import SessionRecorder

SECRET = "sk-ant-oat01-NOT-FOR-THE-MODEL"
INVALID_PARAMS = -32602


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
    credentials = config / ".credentials.json"
    credentials.write_text(json.dumps({"claudeAiOauth": {"accessToken": SECRET}}))
    credentials.chmod(0o600)
    rec = SessionRecorder.create(projects, str(data))
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
    assert rec.path.read_bytes() == before
