"""A listing that reads no file whole: heads and tails (`storage.headlist`), plus what the index database knows.

A session file the database holds unchanged (same identity, by one `stat`) is taken from its stored summary, with
its message count, as `storage.indexedlist` takes it; a usage total stored with the stamps the session's files
still have fills `usage`. Nothing is written: the database is only read, and a damaged or missing one answers
nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from storage.headlist import HeadSession, list_heads
from storage.indexdb import DAMAGE, SAME, FileRecord, IndexDB, compare
from storage.indexedlist import SUB_STAMPS, SUBAGENTS, folder_stamps, info_from_json
from storage.paths import subagent_files
from storage.sessions import SessionInfo, subagent_json
from storage.usagetotals import session_stamp


def list_sessions_partial(
    projects_dir: Path, project_dirs: Iterable[Path] | None = None, *, db: IndexDB | None = None
) -> list[HeadSession]:
    """`storage.headlist.list_heads`, each session's summary and usage taken from the index database (opened here
    if not given) where it still holds them; the rest stays pending."""
    own = db is None
    db = IndexDB.open() if db is None else db
    if db is None:
        return list_heads(projects_dir, project_dirs)
    try:
        try:
            records = db.files()
        except DAMAGE:
            return list_heads(projects_dir, project_dirs)

        def known(path: Path, st: os.stat_result) -> SessionInfo | None:
            return _stored(records.get(str(path)), path, st)

        heads = list_heads(projects_dir, project_dirs, known=known)
        try:
            usages = db.usages(str(h.info.path) for h in heads)
        except DAMAGE:
            usages = {}
    finally:
        if own:
            db.close()
    for head in heads:
        stored = usages.get(str(head.info.path))
        if stored is not None and isinstance(stored[1], dict) and stored[0] == session_stamp(head.info)[0]:
            head.usage = stored[1]
            head.pending.remove("usage")
    return heads


def _stored(record: FileRecord | None, path: Path, st: os.stat_result) -> SessionInfo | None:
    """The stored summary of a file the record shows unchanged, with its subagents as they are now; else None."""
    if record is None or not isinstance(record.info, dict) or compare(record.identity, path, st) != SAME:
        return None
    try:
        info = info_from_json(record.info, path)
    except DAMAGE:  # stored before a field was added: read again
        return None
    folders = folder_stamps(path.with_suffix("") / "subagents")
    if folders == record.info.get(SUB_STAMPS) and isinstance(record.info.get(SUBAGENTS), list):
        info.subagents = record.info[SUBAGENTS]
    else:
        info.subagents = [subagent_json(s) for s in subagent_files(path)]
    return info
