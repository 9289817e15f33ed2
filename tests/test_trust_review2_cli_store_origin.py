"""A `claude-cli` turn on a session written from a session store is never rooted at the cwd its rows record.

cbf0bd1 made a turn of a session pulled from a store (`storage.storeorigin`) need the person's own `cwd`: whoever
can insert into the shared store wrote the recorded one. The check sat in `server.agent.session.open_session`,
which only the `anthropic` provider's loop goes through; the `claude-cli` provider decides its target on its own
(`ClaudeCliProvider._target`) and ran the real CLI in the recorded cwd. A session planted in the store with cwd
`~/.ssh`, pulled, then resumed over the server without `cwd` (Neovim's :SessionTurn gives none) with
`provider: claude-cli`: the CLI's Read, allowed inside its working directory (`Read(./**)`), read the private key
into the transcript, and the next `push` sends it to the store.

Real parts: a real PostgreSQL store, the real `session-lsp pull`, the real server over stdio, the real CLI 2.1.328
against the scripted model asking to `Read`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from rawlsp import RawServer
from realcli import OFFLINE_ENV
from scripted_api import SCRIPTED_KEY, ScriptedModelServer
from test_lsp_store import S1, SHOP, apart, corpus_keys, fill
from test_store_commands import cli

PLANTED = "46464646-4646-4646-8646-464646464646"
SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- planted-for-the-cli-9c1e"


@pytest.mark.realcli
def test_a_pulled_store_session_resumed_by_the_cli_without_cwd_is_refused(
    claude: Path, model: ScriptedModelServer, pg_server: Any, pg_schema: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    ssh = home / ".ssh"
    ssh.mkdir(parents=True, mode=0o700)
    key = ssh / "id_ed25519"
    key.write_text(SECRET + "\n")
    projects = tmp_path / "config" / "projects"
    projects.mkdir(parents=True)

    # someone who can write to the store plants a session whose rows record cwd ~/.ssh
    rows = [
        {**r, "sessionId": PLANTED, **({"cwd": str(ssh)} if "cwd" in r else {})} for r in corpus_keys()[(SHOP, S1, "")]
    ]
    project = "".join(c if c.isalnum() else "-" for c in str(ssh))
    url = pg_server.url()
    apart(fill(url, pg_schema, {(project, PLANTED, ""): rows}))
    pulled = cli("pull", PLANTED, "--store", url, "--store-schema", pg_schema, "--projects-dir", str(projects))
    assert pulled.returncode == 0, pulled.stderr
    local = projects / project / f"{PLANTED}.jsonl"
    assert local.is_file()
    copied = local.read_bytes()

    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "SESSION_LSP_CLAUDE": str(claude),
        "ANTHROPIC_BASE_URL": model.base_url,
        "ANTHROPIC_API_KEY": SCRIPTED_KEY,
        "CLAUDE_CODE_TMPDIR": str(tmp_path / "cli-tmp"),
        **OFFLINE_ENV,
    }
    with RawServer(env=env) as server:
        server.initialize(projects, watch=False)
        # the person resumes the local copy as listed, with no cwd; the model asks for the key
        reply = server.call(
            "sessions/runTurn",
            {"sessionId": PLANTED, "provider": "claude-cli", "prompt": f"READ {key}"},
            timeout=240,
        )
        text = local.read_text(encoding="utf-8")
        assert SECRET not in text, "the CLI ran in the store's recorded ~/.ssh and read the key into the transcript"
        assert "error" in reply, reply
        error = reply["error"]
        assert "cwd" in error["message"] and "session store" in error["message"], error
        assert (error.get("data") or {}).get("reason") == "unsafe", error
        assert local.read_bytes() == copied  # nothing written

        # the person's own folder: the CLI runs there, and the planted folder is out of its reach
        work = tmp_path / "work"
        work.mkdir()
        reply = server.call(
            "sessions/runTurn",
            {"sessionId": PLANTED, "provider": "claude-cli", "cwd": str(work), "prompt": f"READ {key}"},
            timeout=240,
        )
        assert "result" in reply, reply
    for path in projects.rglob("*.jsonl"):
        assert SECRET not in path.read_text(encoding="utf-8"), path
    assert json.loads(local.read_text(encoding="utf-8").splitlines()[-1])
