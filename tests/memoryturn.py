"""A memory test's turn: a new session run by the real `session-lsp turn` in a checkout, the project's external
imports approved or not, and what its memory put where: sent to the scripted model, recorded in the transcript."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from scripted_api import ScriptedModelServer
from turnproc import new_session


def memory_turn(model: ScriptedModelServer, config: Path, app: Path, *, approved: bool) -> tuple[str, str]:
    """Run a new turn in `app` (config home `config`), `hasClaudeMdExternalIncludesApproved` for it when `approved`;
    (what was sent to the model, the transcript written)."""
    if approved:
        project = {"hasClaudeMdExternalIncludesApproved": True}
        (config / ".claude.json").write_text(json.dumps({"projects": {str(app): project}}))
    first = len(model.requests)
    _, path = new_session(config / "projects", app, timeout=120)
    return json.dumps(model.requests[first:]), path.read_text()


def assert_loaded(sent: str, recorded: str, always: Iterable[str], external: Iterable[str], approved: bool) -> None:
    """Each of `always` sent and recorded; each of `external` sent and recorded only when `approved`."""
    for text in always:
        assert text in sent and text in recorded, text
    for text in external:
        assert (text in sent) is approved and (text in recorded) is approved, (text, approved)
