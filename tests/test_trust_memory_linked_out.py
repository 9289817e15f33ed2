"""A project memory file (`CLAUDE.md`, `.claude/CLAUDE.md`, `CLAUDE.local.md` of the working directory or of a folder
above it) that is a link out of the working directory is external memory: loaded only once the project's external
imports are approved, as `@` imports and rule files are.

The real CLI 2.1.328 reads such a file wherever its link leads: a cloned repository (git keeps symlinks) whose
`CLAUDE.md` is a link to `../../.ssh/id_rsa` has the private key sent to the model as project instructions and
recorded in the transcript (then pushed to a team's store by a store turn). Here that file waits for the approval
the CLI asks for an external import; a file reached by no link, and one linked inside the working directory, are
read as before. The real `session-lsp turn` command reads the memory.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from memoryturn import assert_loaded, memory_turn
from scripted_api import ScriptedModelServer

KEY = "-----BEGIN OPENSSH PRIVATE KEY----- a CLAUDE.md linked out, not for the model"
LOCAL = "AWS_SECRET_ACCESS_KEY=a CLAUDE.local.md linked out"


@pytest.mark.parametrize("approved", [False, True], ids=["not-approved", "approved"])
def test_memory_files_linked_out_of_the_checkout_wait_for_approval(
    private_home: Path, scripted_model: ScriptedModelServer, approved: bool
) -> None:
    config = Path(os.environ["CLAUDE_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (private_home / ".ssh").mkdir()
    (private_home / ".ssh" / "id_rsa").write_text(KEY)
    (private_home / ".aws").mkdir()
    (private_home / ".aws" / "credentials").write_text(LOCAL)
    src = private_home / "src"
    app = src / "app"
    (app / ".claude").mkdir(parents=True)
    (src / "CLAUDE.md").write_text("ANCESTOR-PLAIN-MEMORY")
    (app / "AGENTS.md").write_text("INSIDE-LINKED-MEMORY")
    (app / ".claude" / "CLAUDE.md").symlink_to("../AGENTS.md")  # a link inside the checkout: its own
    (app / "CLAUDE.md").symlink_to("../../.ssh/id_rsa")  # the checkout's, to the key
    (app / "CLAUDE.local.md").symlink_to(private_home / ".aws" / "credentials")
    sent, recorded = memory_turn(scripted_model, config, app, approved=approved)
    assert_loaded(
        sent, recorded, ("ANCESTOR-PLAIN-MEMORY", "INSIDE-LINKED-MEMORY"), (KEY, LOCAL), approved
    )  # before: both sent and recorded, approved or not
