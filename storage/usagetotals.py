"""Each listed session's usage total kept in the index database: an unchanged session costs a `stat` per file.

A total is stored with the stamp of every file it was summed from (the session file, then its subagent and
legacy agent files in listing order: path, device, inode, size, mtime, ctime, file type) and the price table's
date. It is used again only when every file still has its stamp; any difference (an append, a rewrite, a
subagent added or gone, a new price table) sums the session again through `storage.usagecache.UsageCache`,
which reads only appended bytes, and a total is never stored while one of its files was modified too
recently for a same-size rewrite to show in its mtime (`storage.indexdb.settled`).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from storage.folderstamp import settled
from storage.indexdb import DAMAGE, FILLS, IndexDB
from storage.prices import PRICES_DATE

if TYPE_CHECKING:
    from storage.sessions import SessionInfo
    from storage.usagecache import UsageCache

Stamp = list[Any]


def session_stamp(info: SessionInfo) -> tuple[Stamp, bool]:
    """The stamp of a listed session's files, and whether all of them are settled (safe to store)."""
    paths = [str(info.path)] + [s["path"] for s in info.subagents if isinstance(s, dict) and s.get("path")]
    out: Stamp = [PRICES_DATE]
    ok = True
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            out.append([p])
            continue
        out.append([p, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, stat.S_IFMT(st.st_mode)])
        ok = ok and settled(st)
    return out, ok


def sessions_usage_indexed(infos: Sequence[SessionInfo], db: IndexDB | None = None) -> list[dict[str, Any]]:
    """`storage.usage.sessions_usage_json`, taking the total of every unchanged session from the index
    database (opened here if not given); without a database (caching off), every session is summed."""
    own = db is None
    db = IndexDB.open() if db is None else db
    if db is None:
        from storage.usage import sessions_usage_json

        return sessions_usage_json(infos)
    FILLS.wait()  # a fill under way in this process is storing every total: take them from it
    try:
        try:
            stored = db.usages([str(i.path) for i in infos])
        except DAMAGE:
            stored = {}
        return _totals(db, infos, stored)
    finally:
        if own:
            db.close()


def usage_total(info: SessionInfo, cache: UsageCache) -> tuple[Stamp, bool, dict[str, Any]]:
    """A listed session's stamp (taken before its files are read), whether it may be stored, and its usage
    summed through `cache` (`storage.fill` workers call this for the sessions they read)."""
    from storage.usage import session_usage_json

    stamp, ok = session_stamp(info)
    return stamp, ok, session_usage_json(info, cache)


def _totals(db: IndexDB, infos: Sequence[SessionInfo], stored: dict[str, tuple[Any, Any]]) -> list[dict[str, Any]]:
    cache: UsageCache | None = None
    out: list[dict[str, Any]] = []
    fresh: list[tuple[str, Stamp, dict[str, Any]]] = []
    for info in infos:
        stamp, ok = session_stamp(info)
        known = stored.get(str(info.path))
        if known is not None and known[0] == stamp and isinstance(known[1], dict):
            out.append(known[1])
            continue
        if cache is None:  # the responses of earlier runs are loaded only when a session changed
            from storage.usagecache import UsageCache

            cache = UsageCache()
        from storage.usage import session_usage_json

        usage = session_usage_json(info, cache)  # `stamp` was taken before the files were read
        out.append(usage)
        if ok:
            fresh.append((str(info.path), stamp, usage))
    if cache is not None:
        cache.save()
    if fresh:
        with contextlib.suppress(*DAMAGE):  # a damaged database only loses the saving; the next open rebuilds it
            db.put_usages(fresh)
            db.commit()
    return out
