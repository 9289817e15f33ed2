"""A new session records the git branch of its working directory, read from `.git/HEAD` (or the
`gitdir:` a `.git` file names). A hostile checkout (an unpacked archive can hold anything) may make
HEAD a FIFO or a link to an endless device: starting a turn there must neither hang nor swamp the
server; the branch is then `HEAD`, as outside a repository. The real `session-lsp turn` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("planted", ["fifo", "link to /dev/zero"])
def test_a_hostile_git_head_neither_hangs_nor_swamps_a_new_turn(tmp_path: Path, planted: str) -> None:
    work = tmp_path / "checkout"
    (work / ".git").mkdir(parents=True)
    if planted == "fifo":
        os.mkfifo(work / ".git" / "HEAD")
    else:
        (work / ".git" / "HEAD").symlink_to("/dev/zero")
    projects = tmp_path / "config" / "projects"
    command = [sys.executable, "-m", "server.cli", "turn", "--new", "--provider", "anthropic", "--json"]
    try:
        out = subprocess.run(
            [*command, "--cwd", str(work), "--projects-dir", str(projects), "hello"],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the turn hung reading .git ({planted})")
    assert out.returncode == 0, out.stderr
    path = Path(json.loads(out.stdout)["path"])
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert {r.get("gitBranch") for r in rows if r.get("type") == "user"} == {"HEAD"}
