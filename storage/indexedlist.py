"""Listing sessions through the persistent index: an unchanged file costs one `stat`, not a read.

The same result as `storage.sessions.list_sessions`: a file whose identity is unchanged gives its stored
summary; one that grew is summarised again with its messages counted from the stored offset; anything
else is read as if new. Subagent files and legacy agent files are looked up afresh every time (a folder
listing each), since they change without their session file changing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import fields
from pathlib import Path
from typing import Any

from storage.countcache import CountCache
from storage.indexdb import APPENDED, DAMAGE, FILLS, SAME, FileRecord, Identity, IndexDB, compare
from storage.paths import decodable, iter_project_dirs, iter_session_files, subagent_files
from storage.sessions import (
    SessionInfo,
    attach_legacy_agents,
    link_session_forks,
    list_sessions,
    read_session_info,
    subagent_json,
)
from storage.unlisted import unlisted

SUBAGENTS, SUB_STAMPS = "_subagents", "_subagentFolders"
_STORED = tuple(f.name for f in fields(SessionInfo) if f.name not in ("path", "project_dir", "subagents"))


def info_to_json(info: SessionInfo) -> dict[str, Any]:
    return {name: getattr(info, name) for name in _STORED}


def _complete(data: dict[str, Any]) -> bool:
    """Whether a stored summary has every field (one stored before a field was added is read again)."""
    return all(name in data for name in _STORED)


def info_from_json(data: dict[str, Any], path: Path) -> SessionInfo:
    info = SessionInfo(session_id=path.stem, path=path, project_dir=path.parent)
    for name in _STORED:
        setattr(info, name, data[name])
    return info


def folder_stamps(root: Path) -> list[list[Any]] | None:
    """(name, mtime) of a subagents folder and every folder under it; None when there is none. A subagent
    file or `.meta.json` added, removed or renamed changes its folder's mtime."""
    try:
        stamps = [["", os.stat(root).st_mtime_ns]]
    except OSError:
        return None
    todo = [root]
    while todo:
        folder = todo.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if decodable(entry.name) and entry.is_dir(follow_symlinks=False):
                try:
                    stamps.append([os.path.relpath(entry.path, root), entry.stat().st_mtime_ns])
                except OSError:
                    continue
                todo.append(Path(entry.path))
    stamps.sort()
    return stamps


def _record(
    path: Path,
    st: os.stat_result,
    count: int,
    offset: int,
    info: SessionInfo,
    folders: list[list[Any]] | None,
    read: dict[str, Any] | None = None,
    subagents: list[dict[str, Any]] | None = None,
) -> FileRecord:
    """The index record of a summary: `read` (default: `info`) as read from the file, before fork linking
    (which sets `forkedFrom` from other files), with `info`'s compact boundaries and `subagents` (default:
    `info`'s): those of its subagents folder, without the legacy agent files a listing attaches."""
    data = dict(read) if read is not None else info_to_json(info)
    data["compact_uuids"], data["compact_scanned"] = info.compact_uuids, info.compact_scanned
    data[SUBAGENTS] = list(info.subagents if subagents is None else subagents)
    data[SUB_STAMPS] = folders
    return FileRecord(str(path), Identity.of(path, st), offset, count, data)


def summarise(path: Path, counts: CountCache) -> tuple[SessionInfo, FileRecord]:
    """A session file read as if new: its summary (messages counted through `counts`) and the record a
    listing stores for it (`storage.fill` workers call this for the files they read)."""
    st = os.stat(path)
    folders = folder_stamps(path.with_suffix("") / "subagents")
    info = read_session_info(path, counts=counts)
    counted, upto = counts.counted(path) or (info.message_count, st.st_size)
    return info, _record(path, st, counted, upto, info, folders)


def list_sessions_indexed(
    projects_dir: Path, project_dirs: Iterable[Path] | None = None, *, db: IndexDB | None = None
) -> list[SessionInfo]:
    """`list_sessions`, taking what did not change from the index database (opened here if not given)."""
    own = db is None
    db = IndexDB.open() if db is None else db
    if db is None:
        return list_sessions(projects_dir, project_dirs)
    FILLS.wait()  # a fill under way in this process is storing every summary: take them from it
    dirs = list(project_dirs) if project_dirs is not None else list(iter_project_dirs(projects_dir))
    try:
        try:
            return _list(db, dirs)
        except DAMAGE:
            rebuilt = db.rebuild()
            if rebuilt is None:
                return list_sessions(projects_dir, dirs)
            db = rebuilt
            return _list(db, dirs)
    finally:
        if own:
            db.close()


def _list(db: IndexDB, dirs: list[Path]) -> list[SessionInfo]:
    stored = db.files()
    counts = CountCache(where=None)
    out: list[SessionInfo] = []
    updates: list[FileRecord] = []
    fresh: list[tuple[Path, os.stat_result, SessionInfo, list[list[Any]] | None, dict[str, Any], list[Any]]] = []
    """Summaries read again: stored after fork linking, which may have scanned them for compact boundaries."""
    kept: dict[Path, tuple[FileRecord, os.stat_result, int, list[list[Any]] | None, list[Any]]] = {}
    """Stored summaries taken as they were: record, stat, bytes scanned for boundaries, subagent folders,
    subagents before the legacy agent files were attached."""
    gone: list[str] = []
    for d in dirs:
        in_dir: list[SessionInfo] = []
        seen: set[str] = set()
        for path in iter_session_files(d):
            key = str(path)
            seen.add(key)
            try:
                st = os.stat(path)
                rec = stored.get(key)
                how = compare(rec.identity, path, st) if rec is not None else None
                if rec is not None and how == SAME and rec.info is not None and _complete(rec.info):
                    info = info_from_json(rec.info, path)
                    folders = folder_stamps(path.with_suffix("") / "subagents")
                    if folders == rec.info.get(SUB_STAMPS):
                        info.subagents = list(rec.info[SUBAGENTS])
                    else:
                        info.subagents = [subagent_json(s) for s in subagent_files(path)]
                        updates.append(_record(path, st, rec.count, rec.offset, info, folders))
                    kept[path] = (rec, st, info.compact_scanned, folders, list(info.subagents))
                else:
                    if rec is not None and how == APPENDED:  # count only what was appended
                        counts.seed(path, st.st_ino, rec.count, rec.offset)
                    folders = folder_stamps(path.with_suffix("") / "subagents")
                    info = read_session_info(path, counts=counts)
                    if rec is not None and how == APPENDED and rec.info is not None:  # scan only what was appended
                        info.compact_uuids = rec.info.get("compact_uuids")
                        info.compact_scanned = rec.info.get("compact_scanned", 0)
                    fresh.append((path, st, info, folders, info_to_json(info), list(info.subagents)))
            except OSError as exc:
                unlisted(path, exc)
                continue
            if info.has_messages:  # as `list_sessions`: a file with no conversation is no session
                in_dir.append(info)
        prefix = str(d) + os.sep
        gone.extend(p for p in stored if p.startswith(prefix) and p not in seen and os.sep not in p[len(prefix) :])
        attach_legacy_agents(d, in_dir)
        out.extend(in_dir)
    link_session_forks(out)
    for path, st, info, folders, read, subagents in fresh:
        counted, upto = counts.counted(path) or (info.message_count, st.st_size)
        updates.append(_record(path, st, counted, upto, info, folders, read, subagents))
    for info in out:
        was = kept.get(info.path)
        if was is not None and info.compact_scanned != was[2]:  # scanned for boundaries just now
            rec, st, _, folders, subagents = was
            updates.append(_record(info.path, st, rec.count, rec.offset, info, folders, rec.info, subagents))
    out.sort(key=lambda s: s.modified_ts, reverse=True)
    if updates or gone:
        db.put_files(updates)
        db.drop_files(gone)
        db.commit()
    return out
