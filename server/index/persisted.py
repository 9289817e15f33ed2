"""`check` of a whole folder through the persistent index: only sessions whose files changed are read.

A session's checks depend on its own files (the main transcript and its subagents) and on the legacy
agent files beside it; their identities (device, inode, size, mtime) and those names are stored with the
session's result. An unchanged session gives its stored diagnostics and unresolved links; the others are
checked (on several processes when there are many) and stored. Links across files are then settled
against the stored uuid table, restricted to the files present now.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from server.index.diagnostics import Diagnostic
from server.index.links import resolve
from server.index.parallel import _tasks, check_folder
from server.index.saved import (
    diag_from_json,
    diag_to_json,
    key_text,
    legacy_ids,
    pending_from_json,
    pending_to_json,
    row_uuids,
    stamps,
)
from server.index.store import ProjectIndex, SessionKey, session_key
from storage.indexdb import DAMAGE, IndexDB

SessionResult = tuple[str, list[Any], list[Any]]
"""(session key, diagnostics as JSON lists, pending links as JSON lists)."""
Work = tuple[list[SessionResult], list[tuple[str, list[tuple[str, int]]]]]


def _work(root: Path, paths: list[Path]) -> Work:
    idx = ProjectIndex(root, persist=False)
    idx.scan(paths=paths)
    results = []
    for key in list(idx._members):
        report = idx._report(key)
        results.append(
            (key_text(key), [diag_to_json(d) for d in report.diagnostics], [pending_to_json(p) for p in report.pending])
        )
    uuids = [(str(p), row_uuids(s)) for p, s in idx.files.items()]
    return results, uuids


@contextlib.contextmanager
def _computing(
    root: Path, paths: list[Path], workers: int, progress: Callable[[int, int], None] | None
) -> Iterator[Iterator[Work]]:
    """The results of checking `paths`, each task's as soon as it is done (the caller stores them while the
    other tasks run). The worker processes are forked on entry, before the caller opens its transaction."""
    if workers < 2 or len(paths) < 4:
        yield _inline(root, paths, progress)
        return
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        futures = {pool.submit(_work, root, t): len(t) for t in _tasks(paths)}
        yield _as_done(futures, len(paths), progress)


def _inline(root: Path, paths: list[Path], progress: Callable[[int, int], None] | None) -> Iterator[Work]:
    if paths:
        yield _work(root, paths)
    if progress is not None:
        progress(len(paths), len(paths))


def _as_done(
    futures: dict[Future[Work], int], total: int, progress: Callable[[int, int], None] | None
) -> Iterator[Work]:
    done = 0
    for fut in as_completed(futures):
        yield fut.result()
        done += futures[fut]
        if progress is not None:
            progress(done, total)


def check_folder_indexed(
    projects_dir: Path,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    *,
    db: IndexDB | None = None,
    skipped: dict[Path, str] | None = None,
) -> tuple[list[Diagnostic], int]:
    """All diagnostics of a projects folder and the number of files checked, as `check_folder` gives them;
    `skipped`, when given, gets the entries that are not regular files."""
    own = db is None
    db = IndexDB.open() if db is None else db
    if db is None:
        return check_folder(projects_dir, workers, progress, skipped)
    try:
        try:
            return _check(db, projects_dir, workers or os.cpu_count() or 1, progress, skipped)
        except DAMAGE:
            rebuilt = db.rebuild()
            if rebuilt is None:
                return check_folder(projects_dir, workers, progress, skipped)
            db = rebuilt
            return _check(db, projects_dir, workers or os.cpu_count() or 1, progress, skipped)
    finally:
        if own:
            db.close()


def _check(
    db: IndexDB,
    projects_dir: Path,
    workers: int,
    progress: Callable[[int, int], None] | None,
    skipped: dict[Path, str] | None = None,
) -> tuple[list[Diagnostic], int]:
    index = ProjectIndex(projects_dir, persist=False)
    root = index.projects_dir
    paths = list(index.discover())
    if skipped is not None:
        skipped.update(index.skipped)
    groups: dict[SessionKey, list[Path]] = {}
    for p in paths:
        groups.setdefault(session_key(p), []).append(p)
    legacy: dict[Path, list[str]] = {}
    stamped: dict[str, Any] = {}
    for key, members in groups.items():
        if key[0] not in legacy:
            legacy[key[0]] = legacy_ids(key[0])
        stamped[key_text(key)] = stamps(members, legacy[key[0]])
    stored = db.sessions()
    prefix = str(root) + os.sep
    reports: dict[str, tuple[list[Any], list[Any]]] = {}
    todo: list[Path] = []
    for key, members in groups.items():
        text = key_text(key)
        old = stored.get(text)
        if old is not None and stamped[text] is not None and old[0] == stamped[text]:
            reports[text] = (old[1][0], old[1][1])
        else:
            todo.extend(members)
    fresh: list[tuple[str, Any, Any]] = []
    read: list[tuple[str, list[tuple[str, int]]]] = []  # the files just read, with their uuids
    with _computing(root, todo, workers, progress) as works, db.uuid_load():
        for results, uuids in works:
            for text, diags, pending in results:
                reports[text] = (diags, pending)
                if stamped.get(text) is not None:
                    fresh.append((text, stamped[text], [diags, pending]))
            for path, ids in uuids:
                db.put_uuids(path, ids)
                read.append((path, ids))
    gone = [k for k in stored if k.startswith(prefix) and k not in stamped]
    present = {str(p) for p in paths}
    dropped = [p for p in db.stored_uuid_paths(prefix) if p not in present]
    saved = True
    if fresh or gone or dropped or todo:
        db.put_sessions(fresh)
        db.drop_sessions(gone)
        db.drop_uuids(dropped)
        saved = db.commit()
    diags = [diag_from_json(d) for diags, _ in reports.values() for d in diags]
    pending = [pending_from_json(p) for _, pend in reports.values() for p in pend]
    mains = {p.stem: p for p in paths if p.stem == session_key(p)[1]}

    order = {str(p): i for i, p in enumerate(paths)}  # the order a full scan finds them in
    # The database's rows of the files just read are theirs once it took them; until then (or for a file that
    # could not be read) whatever it holds is older than the files, and the uuids read now stand in.
    fresh_homes: dict[str, list[tuple[str, int]]] = {}
    unread = {str(p) for p in todo}
    if saved:
        unread.difference_update(path for path, _ in read)
    else:
        for path, ids in read:
            for uid, line in ids:
                fresh_homes.setdefault(uid, []).append((path, line))

    def lookup(uuid: str) -> list[tuple[Path, int]]:
        found = [(p, n) for p, n in db.homes(uuid) if p in present and p not in unread]
        found += fresh_homes.get(uuid, [])
        return [(Path(p), n) for p, n in sorted(found, key=lambda h: (order[h[0]], h[1]))]

    diags += resolve(pending, lookup, mains.get)
    return sorted(diags, key=Diagnostic.sort_key), len(paths)
