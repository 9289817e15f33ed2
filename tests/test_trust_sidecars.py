"""A subagent's `.meta.json` beside its transcript is read only as a small regular file in its own right.

Planted as a FIFO, the listing hung opening it; as a link to `/dev/zero`, it read without end; as a link to a
JSON file outside the projects folder, the listing showed that file's `agentType` and `description`. Each
is now left unread (the subagent is listed with no type), through the real `session-lsp list --json`, run
under a liveness bound and a 1 GiB address-space cap so that the old behaviour fails rather than hangs.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CORPUS
from turnproc import ROOT, cli_env

S1 = "11111111-1111-4111-8111-111111111111"
SECRET = "outside-the-projects-folder"
LIVENESS = 30


def capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


@pytest.mark.parametrize("planted", ["FIFO", "link to /dev/zero", "link to a file outside", "2 MiB file"])
def test_a_planted_subagent_meta_file_is_never_read(tmp_path: Path, planted: str) -> None:
    projects = tmp_path / "config" / "projects"
    shutil.copytree(CORPUS / "projects", projects)
    subagents = projects / "-Users-me-shop" / S1 / "subagents"
    subagents.mkdir(parents=True)
    row = {"type": "user", "sessionId": S1, "isSidechain": True, "agentId": "a5", "uuid": "u1", "parentUuid": None}
    (subagents / "agent-a5.jsonl").write_text(json.dumps({**row, "message": {"role": "user", "content": "x"}}) + "\n")
    meta = subagents / "agent-a5.meta.json"
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"agentType": SECRET, "description": SECRET}))
    if planted == "FIFO":
        os.mkfifo(meta)
    elif planted == "link to /dev/zero":
        meta.symlink_to("/dev/zero")
    elif planted == "link to a file outside":
        meta.symlink_to(outside)
    else:
        meta.write_text(json.dumps({"agentType": SECRET, "description": "x" * (2 << 20)}))
    try:
        done = subprocess.run(
            [sys.executable, "-m", "server.cli", "list", "--projects-dir", str(projects), "--json"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=cli_env(projects.parent),
            timeout=LIVENESS,
            preexec_fn=capped,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"`session-lsp list` hung on a subagent meta file that is a {planted}")
    assert done.returncode == 0, done.stderr[-1500:]
    (session,) = [s for s in json.loads(done.stdout) if s["sessionId"] == S1]
    (sub,) = session["subagents"]
    assert sub["agentId"] == "a5"
    assert sub["agentType"] is None and sub["description"] is None, sub
    assert SECRET not in done.stdout
