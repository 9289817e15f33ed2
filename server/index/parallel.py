"""`check` of a whole projects folder on several processes: sessions are checked where they are
read, and only diagnostics, unresolved links and uuid lists come back to be settled here."""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import as_completed
from pathlib import Path

from server.index.checks import Pending
from server.index.diagnostics import Diagnostic, bounded
from server.index.links import resolve
from server.index.store import ProjectIndex, file_size, session_key
from server.index.workerpool import forking, worker_pool

TASK_BYTES = 8 * 1024 * 1024
WorkResult = tuple[list[Diagnostic], list[Pending], list[tuple[Path, list[str], list[int]]], int]


def _work(root: Path, paths: list[Path]) -> WorkResult:
    idx = ProjectIndex(root, persist=False)  # a forked worker: the database is the forking process's
    idx.scan(paths=paths, discovered=True)
    diags: list[Diagnostic] = []
    pending: list[Pending] = []
    for key in list(idx._members):
        report = idx._report(key)
        diags.extend(report.diagnostics)
        pending.extend(report.pending)
    uuids = [(p, list(s.transcript.nodes), [r.line for r in s.transcript.nodes.values()]) for p, s in idx.files.items()]
    return diags, pending, uuids, len(idx.files)


def _tasks(paths: list[Path]) -> list[list[Path]]:
    """Whole sessions per task, about TASK_BYTES each, biggest first (better balance)."""
    sessions: dict[tuple[Path, str], list[Path]] = {}
    for p in paths:
        sessions.setdefault(session_key(p), []).append(p)

    def size(group: list[Path]) -> int:
        return sum(file_size(p) for p in group)  # one stat a file

    groups = sorted(((size(g), g) for g in sessions.values()), key=lambda x: x[0], reverse=True)
    tasks: list[list[Path]] = []
    current: list[Path] = []
    current_size = 0
    for n, group in groups:
        if n >= TASK_BYTES:
            tasks.append(group)
            continue
        current += group
        current_size += n
        if current_size >= TASK_BYTES:
            tasks.append(current)
            current, current_size = [], 0
    if current:
        tasks.append(current)
    return tasks


def check_folder(
    projects_dir: Path,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    skipped: dict[Path, str] | None = None,
) -> tuple[list[Diagnostic], int]:
    """All diagnostics of a projects folder and the number of files checked; `skipped`, when
    given, gets the entries that are not regular files."""
    index = ProjectIndex(projects_dir)
    paths = list(index.discover())
    workers = workers or os.cpu_count() or 1
    if workers < 2 or len(paths) < 4:
        index.scan(progress, paths=paths, discovered=True)
        if skipped is not None:
            skipped.update(index.skipped)
        return index.all_diagnostics(), len(index.files)
    if skipped is not None:
        skipped.update(index.skipped)
    diags: list[Diagnostic] = []
    pending: list[Pending] = []
    homes: dict[str, list[tuple[Path, int]]] = {}
    mains: dict[str, Path] = {}
    done = files = 0
    with worker_pool(workers) as pool:
        with forking():  # the first submit forks every worker
            futures = [pool.submit(_work, index.projects_dir, t) for t in _tasks(paths)]
        for fut in as_completed(futures):
            d, p, uuids, n = fut.result()
            diags += d
            pending += p
            files += n
            for path, ids, lines in uuids:
                if path.stem == session_key(path)[1]:
                    mains[path.stem] = path
                for uid, line in zip(ids, lines):
                    homes.setdefault(uid, []).append((path, line))
            done += n
            if progress is not None:
                progress(done, len(paths))
    diags += resolve(pending, lambda u: homes.get(u, []), mains.get)
    return bounded(diags), files
