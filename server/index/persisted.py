"""`check` of a whole folder through the persistent index: only sessions whose files changed are read.

A session's checks depend on its own files (the main transcript and its subagents) and on the legacy
agent files beside it; their identities (device, inode, size, mtime) and those names are stored with the
session's result. An unchanged session gives its stored diagnostics and unresolved links; the others are
checked (on several processes when there are many) and stored. Links across files are then settled
against the stored uuid tables (one scan for all of them), restricted to the files present now.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from server.index.diagnostics import Diagnostic, bounded
from server.index.fill import fill, session_stamps
from server.index.links import resolve
from server.index.parallel import check_folder
from server.index.saved import diag_from_json, key_text, pending_from_json
from server.index.store import ProjectIndex, norm, session_key
from storage.indexdb import DAMAGE, IndexDB


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
    found = check_projects_indexed(projects_dir, None, workers, progress, db=db, skipped=skipped)
    return found if found is not None else check_folder(projects_dir, workers, progress, skipped)


def check_projects_indexed(
    projects_dir: Path,
    projects: list[Path] | None,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    *,
    db: IndexDB | None = None,
    skipped: dict[Path, str] | None = None,
) -> tuple[list[Diagnostic], int] | None:
    """`check_folder_indexed` of some project folders of `projects_dir` (every one when `projects` is None): the
    files under them, their links settled among them; None when there is no index database to keep them in."""
    own = db is None
    db = IndexDB.open() if db is None else db
    if db is None:
        return None
    try:
        try:
            return _check(db, projects_dir, workers or os.cpu_count() or 1, progress, skipped, projects)
        except DAMAGE:
            rebuilt = db.rebuild()
            if rebuilt is None:
                return None
            db = rebuilt
            return _check(db, projects_dir, workers or os.cpu_count() or 1, progress, skipped, projects)
    finally:
        if own:
            db.close()


def _check(
    db: IndexDB,
    projects_dir: Path,
    workers: int,
    progress: Callable[[int, int], None] | None,
    skipped: dict[Path, str] | None = None,
    projects: list[Path] | None = None,
) -> tuple[list[Diagnostic], int]:
    index = ProjectIndex(projects_dir, persist=False)
    root = index.projects_dir
    paths = list(index.discover())
    prefixes: tuple[str, ...] = (str(root) + os.sep,)
    keys = prefixes
    if projects is not None:
        # a session's files all lie in its project folder, which starts the session's key
        prefixes = tuple(str(norm(p)) + os.sep for p in projects)
        keys = tuple(key_text((norm(p), "")) for p in projects)
        paths = [p for p in paths if str(p).startswith(prefixes)]
    if skipped is not None:
        skipped.update(
            (p, why) for p, why in index.skipped.items() if projects is None or f"{p}{os.sep}".startswith(prefixes)
        )
    groups, stamped = session_stamps(paths)
    stored = db.sessions()
    reports: dict[str, tuple[list[Any], list[Any]]] = {}
    todo: list[Path] = []
    for key, members in groups.items():
        text = key_text(key)
        old = stored.get(text)
        if old is not None and stamped[text] is not None and old[0] == stamped[text]:
            reports[text] = (old[1][0], old[1][1])
        else:
            todo.extend(members)

    def step(paths: list[Path]) -> None:
        done[0] += len(paths)
        if progress is not None:
            progress(done[0], len(todo))

    done = [0]
    filled = fill(db, root, todo, workers=workers, rows=False, progress=step, stamped=stamped)  # stamped once
    if progress is not None and not todo:
        progress(0, 0)
    for text, report in filled.reports.items():
        reports[text] = (report[0], report[1])
    read = filled.uuids  # the files just read, with their uuids
    gone = [k for k in stored if k.startswith(keys) and k not in stamped]
    present = {str(p) for p in paths}
    dropped = [p for prefix in prefixes for p in db.stored_uuid_paths(prefix) if p not in present]
    saved = filled.saved
    if gone or dropped:
        db.drop_sessions(gone)
        db.drop_uuids(dropped)
        db.commit()
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

    stored_homes = db.homes_many({p.target for p in pending})  # one scan of the stored uuids for every link

    def lookup(uuid: str) -> list[tuple[Path, int]]:
        found = [(p, n) for p, n in stored_homes.get(uuid, ()) if p in present and p not in unread]
        found += fresh_homes.get(uuid, [])
        return [(Path(p), n) for p, n in sorted(found, key=lambda h: (order[h[0]], h[1]))]

    diags += resolve(pending, lookup, mains.get)
    return bounded(diags), len(paths)
