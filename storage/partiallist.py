"""A listing that reads no file whole: heads and tails (`storage.headlist`), plus what the index database knows.

For a session file the database holds unchanged (same identity, by one `stat`), its stored message count fills
`messageCount`; a usage total stored with the stamps the session's files still have fills `usage`. Nothing is
written: the database is only read, and a damaged or missing one answers nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from storage.headlist import HeadSession, list_heads
from storage.indexdb import DAMAGE, SAME, FileRecord, IndexDB, compare
from storage.usagetotals import session_stamp


def list_sessions_partial(
    projects_dir: Path, project_dirs: Iterable[Path] | None = None, *, db: IndexDB | None = None
) -> list[HeadSession]:
    """`storage.headlist.list_heads`, each session's count and usage taken from the index database (opened here
    if not given) where it still holds them; the rest stays pending."""
    heads = list_heads(projects_dir, project_dirs)
    own = db is None
    db = IndexDB.open() if db is None else db
    if db is None or not heads:
        return heads
    try:
        keys = [str(h.info.path) for h in heads]
        try:
            records, usages = db.files(keys), db.usages(keys)
        except DAMAGE:
            return heads
        for head in heads:
            _fill(head, records.get(str(head.info.path)), usages.get(str(head.info.path)))
    finally:
        if own:
            db.close()
    return heads


def _fill(head: HeadSession, record: FileRecord | None, usage: tuple[Any, Any] | None) -> None:
    info = head.info
    if record is not None and isinstance(record.info, dict):
        count = record.info.get("message_count")
        try:
            same = compare(record.identity, info.path, os.stat(info.path)) == SAME
        except OSError:
            same = False
        if same and isinstance(count, int) and "messageCount" in head.pending:
            info.message_count = count
            head.pending.remove("messageCount")
    if usage is not None and isinstance(usage[1], dict) and "usage" in head.pending:
        stamp, _settled = session_stamp(info)
        if usage[0] == stamp:
            head.usage = usage[1]
            head.pending.remove("usage")
