"""Forking a store session, into the store or into the local projects folder.

The fork is made by `storage.fork` itself, on the session written (as the SDK writes it before a
resume) into a temporary folder, so it is exactly the fork of the same transcript made locally:
the whole chain with the same uuids, or (`at_uuid`) the chain up to a message with fresh uuids
and `forkedFrom`. Then its lines go either into the store under a new session id of the same
project, in one `append` (one transaction), or into `<projects>/<project_key>/<new id>.jsonl`,
byte for byte, never over an existing file (`storage.access` decides where it may be created).
Subagent transcripts are not copied, as a local fork copies none.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from storage.fork import fork_session
from storage.store_materialize import load_session, write_files, write_session
from storage.storeorigin import mark_from_store

ForkTarget = Literal["store", "local"]


@dataclass
class StoreFork:
    session_id: str
    project_key: str
    into: ForkTarget
    path: str
    """The local file (`into="local"`), else `<project_key>/<session_id>.jsonl` in the store."""
    rows: int


def fork_lines(session: Any, *, at_uuid: str | None, title: str | None) -> tuple[str, bytes]:
    """(new session id, the fork's file content) of a loaded `StoreSession`, made by `storage.fork`."""
    with tempfile.TemporaryDirectory(prefix="slsp-fork-") as tmp:
        root = Path(tmp)
        source = write_session(root, session, scratch=True)
        new_sid, path = fork_session(source, root, at_uuid=at_uuid, title=title, keep_origin=False)
        return new_sid, path.read_bytes()


async def fork_store_session(
    store: Any,
    project_key: str,
    session_id: str,
    *,
    into: ForkTarget = "store",
    projects_dir: Path | None = None,
    at_uuid: str | None = None,
    title: str | None = None,
) -> StoreFork:
    """Fork the store session `project_key`/`session_id` into the store or into `projects_dir`."""
    if into not in ("store", "local"):
        raise ValueError(f"a fork goes into the store or local, not {into!r}")
    session = await load_session(store, project_key, session_id)
    new_sid, data = fork_lines(session, at_uuid=at_uuid, title=title)
    rows = [json.loads(line) for line in data.splitlines() if line.strip()]
    if into == "store":
        await store.append({"project_key": project_key, "session_id": new_sid}, rows)
        return StoreFork(new_sid, project_key, into, f"{project_key}/{new_sid}.jsonl", len(rows))
    if projects_dir is None:
        raise ValueError("a local fork needs the projects folder")
    target = Path(projects_dir) / project_key / f"{new_sid}.jsonl"
    mark_from_store(projects_dir, new_sid)  # its recorded cwd is the store's (`storage.storeorigin`)
    write_files(Path(projects_dir), {target: data})
    return StoreFork(new_sid, project_key, into, str(target), len(rows))
