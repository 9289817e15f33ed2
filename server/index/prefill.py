"""The first index's reading, started as soon as the projects folder is known: before pygls loads.

A cold language server (nothing of the folder in the index database) reads every session on worker processes
(`server.index.fill`). Loading pygls and lsprotocol takes most of a second, and the first index used to start
only after that, on `initialized`. Over stdio the folder is known earlier, from the `initialize` answered before
the server loads (`server.lsp.early`): `start` then forks the workers and has them read the sessions the
database does not hold while pygls loads beside them, and the server's first index `wait`s for that part to be
stored before it scans, restoring those files from the database as on a warm start.

It only stores into the database what the files held when they were read (each session with the identities
its files had then), so a file changed meanwhile is seen by the scan that follows, as after any fill. The
workers are forked before `start` returns, while the calling thread holds no lock: the thread that imports
pygls next may hold an import's lock, which a child forked then would inherit held.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from server.index.store import ProjectIndex, file_size, norm

log = logging.getLogger(__name__)

FORK_WAIT = 5.0
"""Seconds `start` waits for the workers to be forked before it lets its caller go on anyway."""


@dataclass
class Prefill:
    """One folder's reading under way: how far it got, and when its index part is stored."""

    root: Path
    done: tuple[int, int] = (0, 0)
    """(files read, files of the folder)."""
    read_bytes: tuple[int, int] = (0, 0)
    """(bytes read, bytes of the folder)."""
    stored: threading.Event = field(default_factory=threading.Event)
    """Set once the index's part is stored (or the reading failed, or had nothing to read)."""
    forked: threading.Event = field(default_factory=threading.Event)
    changed: threading.Condition = field(default_factory=threading.Condition)


_RUNNING: dict[Path, Prefill] = {}
_LOCK = threading.Lock()


def start(root: Path) -> Prefill | None:
    """Begin reading the sessions of `root` the index database does not hold (None: no database, no folder, or
    a reading of it already under way). Returns once its workers are forked."""
    root = norm(root)
    with _LOCK:
        if root in _RUNNING or not root.is_dir():
            return None
        run = _RUNNING[root] = Prefill(root)
    threading.Thread(target=_read, args=(run,), name="prefill", daemon=True).start()
    run.forked.wait(FORK_WAIT)
    return run


def _read(run: Prefill) -> None:
    t0 = time.monotonic()
    try:
        index = ProjectIndex(run.root)
        try:
            todo = list(index.discover())
            sizes = [file_size(p) for p in todo]

            def step(done: int, total: int) -> None:
                with run.changed:
                    run.done, run.read_bytes = (done, total), index.scan_bytes
                    run.changed.notify_all()

            index.scan_bytes = (0, sum(sizes))
            stored = index.fill_unknown(todo, sizes, step, forked=run.forked.set)
            log.info("read %d files before the server loaded, in %.2f s", len(stored), time.monotonic() - t0)
        finally:
            index.close()
    except Exception:  # the server's own first index reads what this did not store
        log.warning("reading the folder before the server loaded failed", exc_info=True)
    finally:
        run.forked.set()
        with run.changed:
            run.stored.set()
            run.changed.notify_all()


def wait(root: Path, progress: Callable[[int, int, tuple[int, int]], None] | None = None) -> None:
    """Until the reading of `root` under way (if any) has stored its index part; `progress` gets (files read,
    files, (bytes read, bytes)) as it goes."""
    with _LOCK:
        run = _RUNNING.get(norm(root))
    if run is None:
        return
    seen = (-1, -1)
    while not run.stored.is_set():
        with run.changed:
            if run.done == seen and not run.stored.is_set():
                run.changed.wait(0.5)
            done, read_bytes = run.done, run.read_bytes
        if progress is not None and done != seen:
            progress(done[0], done[1], read_bytes)
        seen = done
    with _LOCK:
        _RUNNING.pop(run.root, None)
