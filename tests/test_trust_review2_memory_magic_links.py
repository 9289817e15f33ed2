"""A checkout's memory file linked through the kernel's per-process links (`/proc/self/cwd/...`, `/proc/self/fd/N`,
`/proc/self/root/...`) reads nothing of the session-lsp process's own folder or open files.

9940697 refuses a memory file whose real path (read from the open descriptor) is in `/proc` or `/sys`. A link into
`/proc/self/cwd/` is followed by the kernel to a file of the *reading process's* working directory, whose real path
is not in `/proc`: a cloned repository whose `CLAUDE.md` links to `/proc/self/cwd/.env` had the turn read the `.env`
of the folder session-lsp itself runs in (the editor's project, the home folder a server was started in), knowing
no name of it, send it to the model as project instructions and record it in the transcript. The real CLI runs in
the checkout, where such a link leads back into the checkout. The memory file is now opened following no magic link
(`openat2` `RESOLVE_NO_MAGICLINKS`). The real `session-lsp turn` command, run in a folder holding the secret.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from scripted_api import ScriptedModelServer
from turnproc import ROOT

SECRET = "DATABASE_PASSWORD=in-the-folder-session-lsp-runs-in"


def test_a_memory_file_linked_through_proc_self_cwd_reads_nothing_of_ours(
    private_home: Path, scripted_model: ScriptedModelServer, tmp_path: Path
) -> None:
    config = Path(os.environ["CLAUDE_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    ours = tmp_path / "editor-project"  # where session-lsp runs: not the turn's working directory
    ours.mkdir()
    (ours / ".env").write_text(SECRET + "\n")
    app = tmp_path / "checkout"
    (app / ".claude").mkdir(parents=True)
    (app / "CLAUDE.md").write_text("PROJECT-MEMORY")
    (app / "CLAUDE.local.md").symlink_to("/proc/self/cwd/.env")
    (app / ".claude" / "CLAUDE.md").symlink_to("/proc/thread-self/cwd/.env")
    first = len(scripted_model.requests)
    done = subprocess.run(
        [sys.executable, "-m", "server.cli", "turn", "--new", "--cwd", str(app)]
        + ["--projects-dir", str(config / "projects"), "--provider", "anthropic", "--json", "hello"],
        capture_output=True,
        text=True,
        cwd=ours,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    path = Path(json.loads(done.stdout)["path"])
    sent = json.dumps(scripted_model.requests[first:])
    recorded = path.read_text()
    assert "PROJECT-MEMORY" in sent and "PROJECT-MEMORY" in recorded
    assert SECRET not in sent, "the checkout's memory read the .env of session-lsp's own folder and sent it"
    assert SECRET not in recorded
