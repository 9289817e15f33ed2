"""Forking a session into a new file beside it, in the two ways the CLI does.

- Whole chain, as `claude --resume X --fork-session`: a new session id, the chain resume rebuilds
  copied with the **same uuids**, relinked in order (tool results keep their
  `sourceToolAssistantUUID` parent, a compact boundary keeps its null parent), stamped with the new
  `sessionId`.
- At a message, as the SDK's fork: the chain up to that message with **fresh uuids** (every link
  remapped) and `forkedFrom {sessionId, messageUuid}` on each row.

The source file is only read. The new file, mode 0600, is put in place whole (`storage.wholefile.put_new`): a fork
stopped while it writes, even by SIGKILL, leaves no part of it.
"""

from __future__ import annotations

import os
import uuid as uuidlib
from pathlib import Path
from typing import Any

from storage.access import in_project_folder, open_decided_folder, resolve_target
from storage.chain import build_chain
from storage.errors import ForkError, InUse, NotATranscript
from storage.jsonline import dump_line
from storage.paths import real_root
from storage.reader import read_entries
from storage.rows import Row
from storage.storeorigin import from_store, mark_from_store
from storage.transcript import Transcript
from storage.wholefile import put_new


def _remap_compact(meta: Any, ids: dict[str, str]) -> Any:
    if not isinstance(meta, dict):
        return meta
    out = dict(meta)
    for key in ("preservedSegment", "preservedMessages"):
        part = out.get(key)
        if isinstance(part, dict):
            part = {k: ids.get(v, v) if isinstance(v, str) else v for k, v in part.items()}
            for lk in ("uuids", "allUuids"):
                if isinstance(part.get(lk), list):
                    part[lk] = [ids.get(u, u) for u in part[lk]]
            out[key] = part
    return out


def fork_entries(
    rows: list[Row], bodies: list[dict[str, Any]], new_sid: str, *, source_sid: str, fresh: bool
) -> list[dict[str, Any]]:
    """The chain rows rewritten for the new session, in order."""
    ids = {r.uuid: str(uuidlib.uuid4()) for r in rows if r.uuid} if fresh else {}
    out: list[dict[str, Any]] = []
    prev: str | None = None
    for row, body in zip(rows, bodies):
        entry = dict(body)
        old = row.uuid or ""
        new = ids.get(old, old)
        source = entry.get("sourceToolAssistantUUID")
        if isinstance(source, str):
            source = ids.get(source, source)
            entry["sourceToolAssistantUUID"] = source
        if row.is_compact_boundary:
            parent = None
            if isinstance(entry.get("logicalParentUuid"), str):
                entry["logicalParentUuid"] = ids.get(entry["logicalParentUuid"], entry["logicalParentUuid"])
            entry["compactMetadata"] = _remap_compact(entry.get("compactMetadata"), ids)
        elif row.type == "user" and isinstance(source, str) and source:
            parent = source
        else:
            parent = prev
        entry.pop("parentUuid", None)
        entry = {"parentUuid": parent, **entry, "uuid": new, "sessionId": new_sid}
        if fresh:
            entry["forkedFrom"] = {"sessionId": source_sid, "messageUuid": old}
        out.append(entry)
        prev = new
    return out


def fork_session(
    source: Path,
    projects_dir: Path,
    *,
    at_uuid: str | None = None,
    title: str | None = None,
    session_id: str | None = None,
    fsync: bool = False,
    keep_origin: bool = True,
) -> tuple[str, Path]:
    """Fork `source` (a session file of `projects_dir`) into `<its folder>/<new id>.jsonl`; returns
    (new session id, path). Both are decided by `storage.access.resolve_target`. The fork of a session written
    from a store is marked so too (`storage.storeorigin`; `keep_origin=False` for a scratch folder of our own)."""
    source = resolve_target(projects_dir, path=source, access="read")
    if not in_project_folder(real_root(projects_dir), source):  # the fork goes beside it, where the CLI finds it
        raise NotATranscript(f"{source} is not a session file of a project folder (<project folder>/<id>.jsonl)")
    t = Transcript.load(source)
    if at_uuid is not None:
        row = t.nodes.get(at_uuid)
        if row is None or not row.is_chain_row:
            raise ForkError(f"no message {at_uuid} in {source}")
        if row.sidechain:
            raise ForkError(f"{at_uuid} is a subagent row, not part of the main conversation")
    chain = build_chain(t, at_uuid)
    rows = [r for r in chain.rows if r.uuid and r.type != "progress"]
    if not any(r.is_message for r in rows):
        raise ForkError(f"{source}: no conversation to fork")
    source_sid = t.session_id or source.stem
    new_sid = session_id or str(uuidlib.uuid4())
    if os.path.lexists(source.parent / f"{new_sid}.jsonl"):
        raise InUse(f"Session ID {new_sid} is already in use.")
    target = resolve_target(projects_dir, path=source.parent / f"{new_sid}.jsonl", access="create")
    prompts = [r for r in t.rows if r.type == "last-prompt"][-1:]
    bodies = read_entries(source, rows + prompts)
    entries = fork_entries(rows, bodies[: len(rows)], new_sid, source_sid=source_sid, fresh=at_uuid is not None)
    last_prompt = bodies[-1].get("lastPrompt") if prompts else None
    leaf = next(e["uuid"] for e in reversed(entries) if e.get("type") in ("user", "assistant"))
    tail: list[dict[str, Any]] = [{"type": "last-prompt", "leafUuid": leaf, "sessionId": new_sid}]
    if isinstance(last_prompt, str):
        tail[0] = {"type": "last-prompt", "lastPrompt": last_prompt, "leafUuid": leaf, "sessionId": new_sid}
    if title is not None:
        tail.append({"type": "custom-title", "customTitle": title, "sessionId": new_sid})
    data = b"".join(dump_line(e) for e in entries + tail)
    if keep_origin and from_store(projects_dir, source.stem):
        mark_from_store(projects_dir, new_sid)
    folder = open_decided_folder(target.parent)
    try:
        put_new(folder, target.name, data, target, fsync=fsync)
    except FileExistsError:
        raise InUse(f"Session ID {new_sid} is already in use.") from None
    finally:
        os.close(folder)
    return new_sid, target
