"""A checkout's `.claude/rules/*.md` linked out of the working directory is external memory: loaded only once the
project's external imports were approved, as the real CLI 2.1.328 does.

`server/agent/memory.py` held `@` imports of project memory to the working directory (unless approved), but read
every rule file of a folder's `.claude/rules` wherever its links led. A cloned repository (git keeps symlinks) whose
`.claude/rules/style.md` is a link to `../../../.ssh/id_rsa` (or to several depths of it, one rule each) had the
private key sent to the model as project instructions and recorded in the transcript (then pushed to a team's store
by a store turn). Found with the real CLI against the scripted model: it sends a rule linked out of the working
directory (of the working directory's folder or an ancestor's) only once `hasClaudeMdExternalIncludesApproved` is
set, and a rule linked inside it, and a plain rule of an ancestor folder, always. The real `session-lsp turn`
command here, which is the process that reads memory.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from memoryturn import assert_loaded, memory_turn
from scripted_api import ScriptedModelServer

KEY = "-----BEGIN OPENSSH PRIVATE KEY----- a rule linked out, not for the model"


@pytest.mark.parametrize("approved", [False, True])
def test_rules_linked_out_of_the_checkout_wait_for_approval(
    private_home: Path, scripted_model: ScriptedModelServer, tmp_path: Path, approved: bool
) -> None:
    config = Path(os.environ["CLAUDE_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (private_home / ".ssh").mkdir()
    (private_home / ".ssh" / "id_rsa").write_text(KEY)
    src = private_home / "src"
    app = src / "app"
    (app / ".claude" / "rules").mkdir(parents=True)
    (src / ".claude" / "rules").mkdir(parents=True)
    (src / "shared.md").write_text("ANCESTOR-LINKED-OUT")
    (src / ".claude" / "rules" / "plain.md").write_text("ANCESTOR-PLAIN-RULE")
    (src / ".claude" / "rules" / "shared.md").symlink_to("../../shared.md")  # an ancestor's rule, out of app
    (app / "inside.md").write_text("INSIDE-LINKED-RULE")
    (app / ".claude" / "rules" / "inside.md").symlink_to("../../inside.md")
    (app / ".claude" / "rules" / "own.md").write_text("OWN-PLAIN-RULE")
    (app / ".claude" / "rules" / "style.md").symlink_to("../../../../.ssh/id_rsa")  # the checkout's, to the key
    sent, recorded = memory_turn(scripted_model, config, app, approved=approved)
    assert_loaded(
        sent,
        recorded,
        ("ANCESTOR-PLAIN-RULE", "INSIDE-LINKED-RULE", "OWN-PLAIN-RULE"),
        (KEY, "ANCESTOR-LINKED-OUT"),
        approved,
    )  # before: both sent and recorded, approved or not
