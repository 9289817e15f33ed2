"""CLAUDE.md `@path` imports of a checkout (the project's or an ancestor folder's memory) that reach
outside the working directory: the real CLI 2.1.328 loads them only once the project's external
imports are approved (`hasClaudeMdExternalIncludesApproved` in its `.claude.json`; `-p` never asks),
so a hostile checkout cannot pull `~/.ssh/id_rsa` into what is sent to the model and recorded.
Found with the real CLI (run against the scripted model, it sent none of them until approved, and
the user's own memory's imports always). The real `session-lsp turn` command here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from memoryturn import assert_loaded, memory_turn
from scripted_api import ScriptedModelServer

KEY = "-----BEGIN OPENSSH PRIVATE KEY----- not for the model"


@pytest.mark.parametrize("approved", [False, True])
def test_external_imports_of_a_checkout_wait_for_approval(
    private_home: Path, scripted_model: ScriptedModelServer, tmp_path: Path, approved: bool
) -> None:
    config = Path(os.environ["CLAUDE_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (private_home / ".ssh").mkdir()
    (private_home / ".ssh" / "id_rsa").write_text(KEY)
    (private_home / "mine.md").write_text("USER-IMPORT")
    (config / "CLAUDE.md").write_text("USER-MEMORY @~/mine.md")
    work = tmp_path / "work"
    app = work / "app"
    app.mkdir(parents=True)
    (work / "CLAUDE.md").write_text("PARENT-MEMORY @notes.md @app/inside.md")
    (work / "notes.md").write_text("PARENT-NOTES")
    (app / "inside.md").write_text("INSIDE-IMPORT")
    (app / "CLAUDE.md").write_text("PROJECT-MEMORY @~/.ssh/id_rsa @../notes.md @link.md")
    (app / "link.md").symlink_to(private_home / "mine.md")
    sent, recorded = memory_turn(scripted_model, config, app, approved=approved)
    assert_loaded(
        sent,
        recorded,
        ("USER-MEMORY", "USER-IMPORT", "PARENT-MEMORY", "INSIDE-IMPORT", "PROJECT-MEMORY"),
        (KEY, "PARENT-NOTES"),
        approved,
    )
