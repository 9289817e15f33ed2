"""A checkout's memory files linked to the kernel's files of the process reading them (`/proc/self/environ`) put
nothing of session-lsp's environment in what the model is sent or what the transcript records.

The agent reads the working directory's memory itself (`server/agent/memory.py`): `CLAUDE.md`, `.claude/CLAUDE.md`,
`.claude/rules/*.md`, `CLAUDE.local.md` and their `@` imports, every symlink followed. A checkout (an unpacked archive,
a cloned repository: git keeps symlinks) whose `CLAUDE.local.md` is a link to `/proc/self/environ` had the turn's own
process read its environment: the provider's key, the server's `SESSION_LSP_TOKEN`, the store's `PGPASSWORD`, sent to
the model as project instructions and recorded in the transcript (then pushed to a team's store by a store turn),
though the README keeps them from every command the model runs. Before: every marker below in both. The real CLI
2.1.328 does not load such a file. The real `session-lsp turn` command, which is the process that reads.
"""

from __future__ import annotations

import json
import os
import resource
from pathlib import Path

import pytest
from scripted_api import ScriptedModelServer
from turnproc import new_session

from server.agent.memory import MAX_MEMORY_BYTES

SECRETS = {"SESSION_LSP_TOKEN": "token-marker-not-for-the-model", "PGPASSWORD": "password-marker-not-for-the-model"}


def _checkout(app: Path) -> None:
    """Memory of every kind the agent reads, each a link to one of the process's own files, and an import of one."""
    (app / ".claude" / "rules").mkdir(parents=True)
    (app / "CLAUDE.local.md").symlink_to("/proc/self/environ")
    (app / ".claude" / "CLAUDE.md").symlink_to("/proc/thread-self/environ")
    (app / ".claude" / "rules" / "style.md").symlink_to("/proc/self/environ")
    (app / "CLAUDE.md").write_text("PROJECT-MEMORY @/proc/self/environ @notes.md")
    (app / "notes.md").write_text("PROJECT-NOTES")


@pytest.mark.parametrize("approved", [False, True])
def test_memory_linked_to_the_processs_own_environment_is_not_read(
    scripted_model: ScriptedModelServer, tmp_path: Path, approved: bool
) -> None:
    config = Path(os.environ["CLAUDE_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    app = tmp_path / "app"
    app.mkdir()
    _checkout(app)
    if approved:  # the person let the project import files from outside it: not the process's own
        project = {"hasClaudeMdExternalIncludesApproved": True}
        (config / ".claude.json").write_text(json.dumps({"projects": {str(app): project}}))
    first = len(scripted_model.requests)
    _, path = new_session(config / "projects", app, timeout=120, env=SECRETS)
    sent = json.dumps(scripted_model.requests[first:])
    recorded = path.read_text()
    assert "PROJECT-MEMORY" in sent and "PROJECT-NOTES" in sent and "PROJECT-MEMORY" in recorded
    for name, secret in SECRETS.items():  # before: each in both, with every other variable of the environment
        assert secret not in sent and secret not in recorded, name
    assert "ANTHROPIC_API_KEY=" not in sent and "ANTHROPIC_API_KEY=" not in recorded


ADDRESS_SPACE = 4 << 30
"""The turn's address space: a process holding a memory file of `HUGE` bytes fails (MemoryError) instead of taking
the machine's memory."""
HUGE = 6 << 30


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


@pytest.mark.parametrize("files", [1, 200])
def test_memory_too_large_to_send_is_left_out(scripted_model: ScriptedModelServer, tmp_path: Path, files: int) -> None:
    """A checkout's `CLAUDE.md` of 8 GiB, or 200 rule files of 30 MiB each (sparse files: an archive holds them in a
    few bytes, `tar --sparse`), was read whole at every turn: the turn ended in a MemoryError here (status 1, nothing
    asked), and without a cap took the machine's memory. No Messages API request can carry more than 32 MB: memory
    past that is left out, what fits is read."""
    config = Path(os.environ["CLAUDE_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    app = tmp_path / "app"
    (app / ".claude" / "rules").mkdir(parents=True)
    (app / "CLAUDE.local.md").write_text("LOCAL-MEMORY")
    planted = [app / "CLAUDE.md"] if files == 1 else [app / ".claude" / "rules" / f"r{i:03}.md" for i in range(files)]
    for path in planted:
        with path.open("wb") as fh:
            fh.truncate(HUGE // files)
    first = len(scripted_model.requests)
    _, recorded = new_session(config / "projects", app, timeout=600, preexec_fn=_capped)  # before: MemoryError
    assert recorded.stat().st_size < 12 * MAX_MEMORY_BYTES + (1 << 20)  # twice (files, rendered), a NUL as `\u0000`
    if files == 1:  # the file too large is left out whole, the rest is sent
        sent = json.dumps(scripted_model.requests[first:])
        assert "LOCAL-MEMORY" in sent and len(sent) < 1 << 20
