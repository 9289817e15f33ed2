"""What resuming a transcript gives: its chain and the API form, as one JSON-ready object."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from storage.access import as_path
from storage.apiform import api_messages
from storage.chain import Chain, build_chain
from storage.errors import NotATranscript
from storage.models import is_restored, recorded_model
from storage.reader import read_entries
from storage.transcript import Transcript


@dataclass
class Resumed:
    transcript: Transcript
    chain: Chain
    messages: list[dict[str, Any]]

    @property
    def session_id(self) -> str:
        return self.transcript.session_id or self.transcript.path.stem

    def to_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "path": str(self.transcript.path),
            "leafUuid": self.chain.leaf.uuid if self.chain.leaf else None,
            "uuids": self.chain.uuids,
            "messages": self.messages,
        }


def resume(
    path: Path | str,
    leaf_uuid: str | None = None,
    *,
    bare: bool = False,
    effort_statement: bool = False,
    load: Callable[[Path], Transcript] = Transcript.load,
    on: date | None = None,
) -> Resumed:
    """Load `path` and rebuild the conversation the CLI would send on resume, as a normal
    `claude --resume` does (attachments included); `bare` as `claude --bare --resume` does;
    `effort_statement` adds the empty system message that carries the request's effort, so the
    messages are exactly the request's (what `chain --json` prints). `load` gives the file's link rows
    (a caller with an index passes its own). `on`: the day of the resume (the model it continues with depends on it,
    see :mod:`storage.models`), default today."""
    p = as_path(path)
    t = load(p)
    if not any(r.is_chain_row for r in t.rows):
        raise NotATranscript(f"{p}: no conversation rows (not a Claude Code transcript?)")
    chain = build_chain(t, leaf_uuid)
    return Resumed(t, chain, api_messages(p, chain, bare=bare, effort_statement=effort_statement, on=on))


def last_model(path: Path | str, on: date | None = None) -> str | None:
    """The model a plain `claude --resume` of `path` on day `on` (default today) restores (that of the chain's last
    real reply, when the CLI still offers it); None when the session goes on with the default model."""
    t = Transcript.load(as_path(path))
    chain = build_chain(t)
    recorded = recorded_model(read_entries(t.path, chain.rows))
    return recorded.replace("[1m]", "") if recorded is not None and is_restored(recorded, on) else None
