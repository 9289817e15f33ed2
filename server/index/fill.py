"""Filling the index database from the files themselves: each session read once, on worker processes.

`check` of a folder and the language server's first index both read their unknown sessions through `fill`.
Each session's files are read together on one worker (several workers when there are many files), which
gives back everything the database keeps of them: each file's uuid table and the session's checks, with `rows`
each file's state (link rows, line marks, where reading stopped: the server's index, not `check`, which stays
as fast as a parse), and with `listing` each session file's summary and message
count and each listed session's usage total. The caller's process stores them in one transaction as the
tasks finish, so `check` answers from the checks, the server's index restores its files from the database as
on a warm start (no rows held in memory), and `sessions/list` answers from the database.

Workers are forked and end with their caller (`workerpool`): they only read files and compute, and open no
database.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from server.index.parallel import _tasks
from server.index.saved import key_text, legacy_ids, report_to_json, row_uuids, stamps, storable
from server.index.store import ProjectIndex, SessionKey, session_key, tracked_kind
from server.index.workerpool import forking, in_worker, worker_pool
from storage.countcache import CountCache
from storage.fileopen import why_not_regular
from storage.indexdb import FILLS, FileRecord, Identity, IndexDB
from storage.indexedlist import summarise
from storage.sessions import SessionInfo, attach_legacy_agents
from storage.usagecache import UsageCache
from storage.usagetotals import Stamp, usage_total
from storage.uuidpack import UuidPack, pack

log = logging.getLogger(__name__)
INDEX_NICE = 5
"""The niceness of a worker reading for the index: the process it reads for stores what it reads and answers
requests meanwhile (a partial `sessions/list`), and comes first."""
LISTING_NICE = 10
"""The niceness of a worker once it reads for the listing (the index's process, restoring the index and answering
its first diagnostics, comes first)."""


@dataclass
class Filled:
    """What one task read, as the database stores it."""

    paths: list[Path]
    reports: list[tuple[str, list[Any]]] = field(default_factory=list)
    """(session key, [diagnostics, pending links] as JSON lists) of each session."""
    uuids: list[tuple[str, UuidPack]] = field(default_factory=list)
    rowsets: list[tuple[str, Identity, bytes, bytes]] = field(default_factory=list)
    """The states of the files settled and read whole (the others are read again by whoever needs them)."""
    records: list[FileRecord] = field(default_factory=list)
    usages: list[tuple[str, Stamp, dict[str, Any]]] = field(default_factory=list)
    listing: bool = False
    """A listing task's (records and usages), not the index's."""


@dataclass
class FillResult:
    reports: dict[str, list[Any]] = field(default_factory=dict)
    uuids: list[tuple[str, UuidPack]] = field(default_factory=list)
    """(file, its (uuid, line) pairs, packed) of every file read."""
    saved: bool = False
    """The database took the batch (else another process held it: nothing of it was stored)."""


def _work(root: Path, paths: list[Path], rows: bool = True) -> Filled:
    """Read whole sessions (`paths` holds every file of each) and give back what the index stores of them."""
    if in_worker() and os.getpriority(os.PRIO_PROCESS, 0) < INDEX_NICE:
        os.setpriority(os.PRIO_PROCESS, 0, INDEX_NICE)
    idx = ProjectIndex(root, persist=False)
    idx.scan(paths=paths, discovered=True)
    out = Filled(paths)
    for key in list(idx._members):
        out.reports.append((key_text(key), report_to_json(idx._report(key))))
    for state in idx.files.values():
        out.uuids.append((str(state.path), pack(row_uuids(state))))  # packed here, not in the storing process
        item = storable(state) if rows else None
        if item is not None:
            out.rowsets.append(item)
    return out


def _summaries(paths: list[Path]) -> Filled:
    """The listing's record of each session file of `paths` (whole sessions), and each listed session's usage
    total."""
    out = Filled(paths, listing=True)
    if in_worker() and os.getpriority(os.PRIO_PROCESS, 0) < LISTING_NICE:
        os.setpriority(os.PRIO_PROCESS, 0, LISTING_NICE)  # a worker: the index's process comes first from now on
    counts = CountCache(where=None)
    cache = UsageCache(enabled=False)
    listed: dict[Path, list[SessionInfo]] = {}
    for path in paths:
        if tracked_kind(path) != "session" or why_not_regular(path) is not None:  # as the index skips it
            continue
        try:
            info, record = summarise(path, counts)
        except OSError:
            continue
        out.records.append(record)
        if info.has_messages:
            listed.setdefault(path.parent, []).append(info)
    for folder, infos in listed.items():
        attach_legacy_agents(folder, infos)  # each names its session: those of sessions read elsewhere are theirs
        for info in infos:
            stamp, ok, usage = usage_total(info, cache)
            if ok:
                out.usages.append((str(info.path), stamp, usage))
    return out


_Job = tuple[Callable[..., Filled], tuple[Any, ...]]


@contextlib.contextmanager
def _computing(jobs: list[_Job], workers: int) -> Iterator[Iterator[Filled]]:
    """Each job's result as soon as it is done (the caller stores them while the other jobs run), on `workers`
    processes taking the jobs in order. The workers start on entry, before the caller opens its transaction."""
    if workers < 2:
        yield (job(*args) for job, args in jobs)
        return
    with worker_pool(workers) as pool:
        with forking():  # the first submit forks every worker
            futures = [pool.submit(job, *args) for job, args in jobs]
        yield _as_done(futures)


def _as_done(futures: list[Future[Filled]]) -> Iterator[Filled]:
    for fut in as_completed(futures):
        yield fut.result()


def _jobs(root: Path, paths: list[Path], workers: int, listing: bool, rows: bool) -> list[_Job]:
    """The index's jobs (whole sessions, about `parallel.TASK_BYTES` each), then with `listing` the listing's,
    so the workers read every file for the index before any for the listing; one job of each on one process."""
    tasks = _tasks(paths) if workers >= 2 else [paths] if paths else []
    jobs: list[_Job] = [(_work, (root, task, rows)) for task in tasks]
    return jobs + [(_summaries, (task,)) for task in tasks] if listing else jobs


def session_stamps(paths: list[Path]) -> tuple[dict[SessionKey, list[Path]], dict[str, Any]]:
    """The files of `paths` grouped by session, and each session's stamp (`saved.stamps`: its files' identities
    and the legacy agent files beside them) by key text."""
    groups: dict[SessionKey, list[Path]] = {}
    for p in paths:
        groups.setdefault(session_key(p), []).append(p)
    legacy: dict[Path, list[str]] = {}
    stamped: dict[str, Any] = {}
    for key, members in groups.items():
        if key[0] not in legacy:
            legacy[key[0]] = legacy_ids(key[0])
        stamped[key_text(key)] = stamps(members, legacy[key[0]])
    return groups, stamped


def fill(
    db: IndexDB,
    root: Path,
    paths: list[Path],
    *,
    workers: int | None = None,
    listing: bool = False,
    rows: bool = True,
    collect: bool = True,
    progress: Callable[[list[Path]], None] | None = None,
    stamped: dict[str, Any] | None = None,
    indexed: Callable[[FillResult], None] | None = None,
) -> FillResult:
    """Read `paths` (whole sessions, found by discovery under `root`) and store what they hold; the result has
    the checks and uuids read when `collect` says so; each file's state is stored with `rows`. `progress` gets the
    paths of each task done. The checks of a session are stored only with the identities its files had before
    they were read (`stamped`, by `session_stamps` unless the caller took them already), and none while a file of
    it changed too recently. A failure rolls the whole batch back.

    With `listing`, the listing's records and usage totals are read after everything the index stores, and
    stored in a transaction of their own once the index's is committed; `indexed`, when given, is called with
    the result in between (from then on the listing is stored through a connection of its own, `db` being the
    caller's again), and a failure of the listing is logged, not raised."""
    if stamped is None:
        stamped = session_stamps(paths)[1]
    result = FillResult()
    processes = workers or os.cpu_count() or 1
    processes = processes if len(paths) >= 4 else 1  # a few files are read sooner than workers start
    jobs = _jobs(root, paths, processes, listing, rows)
    with _computing(jobs, processes) as works:
        early: list[Filled] = []
        """Listing tasks done before the index's last one."""
        try:
            with db.uuid_load():
                left = sum(1 for job, _ in jobs if job is _work)
                while left:
                    done = next(works)
                    if done.listing:
                        early.append(done)
                        continue
                    left -= 1
                    _store(db, done, stamped)
                    if collect:
                        result.reports.update(done.reports)
                        result.uuids.extend(done.uuids)
                    if progress is not None:
                        progress(done.paths)
        except BaseException:
            db.rollback()
            raise
        # the first index goes on as soon as its batch is in the log; the listing's commit copies it
        result.saved = db.commit(checkpoint=indexed is None)
        if not listing:
            return result
        rest = itertools.chain(early, works)
        if indexed is None:
            _store_listing(db, rest)
            return result
        indexed(result)
        listed = IndexDB.open(db.path.parent) if db.path is not None else None
        if listed is None:  # not this time (a listing reads what it misses from the files)
            return result
        try:
            _store_listing(listed, rest)
        except Exception:  # the index is stored: a listing reads what it misses from the files
            log.warning("storing the listing of the first index failed", exc_info=True)
        finally:
            listed.close()
    return result


def _store(db: IndexDB, done: Filled, stamped: dict[str, Any]) -> None:
    for path, ids in done.uuids:
        db.put_uuids(path, ids)
    db.put_sessions((text, stamped[text], report) for text, report in done.reports if stamped.get(text) is not None)
    db.put_rowsets(done.rowsets)


def _store_listing(db: IndexDB, works: Iterator[Filled]) -> None:
    """The listing's records and usage totals, in one transaction once every task is done (not holding the
    database's write lock while the tasks run: the index's own writes go on meanwhile)."""
    done = list(works)
    try:
        for part in done:
            db.put_files(part.records)
            db.put_usages(part.usages)
    except BaseException:
        db.rollback()
        raise
    db.commit()


def fill_first(
    db: IndexDB, root: Path, paths: list[Path], *, progress: Callable[[list[Path]], None] | None = None
) -> FillResult:
    """`fill` with the listing, returning as soon as the index's part is stored: the listing is read and stored
    on a thread of its own (which forks the workers and holds them), and a listing asked meanwhile waits for it
    (`FILLS`). Raises what the index's part raised."""
    ready = threading.Event()
    outcome: list[FillResult | BaseException] = []

    def indexed(result: FillResult) -> None:
        outcome.append(result)
        ready.set()

    def run() -> None:
        try:
            with FILLS.running():
                fill(db, root, paths, listing=True, collect=False, progress=progress, indexed=indexed)
        except BaseException as exc:  # raised before `indexed`: the caller's
            if not ready.is_set():
                outcome.append(exc)
            else:
                log.warning("the listing of the first index failed", exc_info=True)
        finally:
            ready.set()

    threading.Thread(target=run, name="fill", daemon=True).start()
    ready.wait()
    found = outcome[0] if outcome else RuntimeError("the fill ended without a result")
    if isinstance(found, BaseException):
        raise found
    return found
