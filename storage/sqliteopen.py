"""The one way session-lsp opens SQLite, and the one process that may not: a fork of ours that did not exec.

A worker forked from a process with other threads (the server, or any process while an index stores its listing on
a thread of its own) inherits SQLite's process-wide state as it was at the fork: a mutex another thread held stays
held forever, and SQLite's record of the parent's file locks is wrong in the child. Opening a database there hangs
the worker (and whoever waits for it), or breaks SQLite's locking. So workers never touch a database: they give
their results back, and the forking process stores them.
"""

from __future__ import annotations

import os
import sqlite3


class ForkedWorker(RuntimeError):
    """SQLite was asked for in a process forked from ours without exec."""


_forked = False


def _mark_forked() -> None:
    global _forked
    _forked = True


os.register_at_fork(after_in_child=_mark_forked)


def forked_worker() -> bool:
    """This process was forked from one of ours and did not exec (a `multiprocessing` fork worker)."""
    return _forked


def connect(where: str, *, timeout: float) -> sqlite3.Connection:
    """A connection to `where` (a file or `:memory:`), usable from any thread; `ForkedWorker` in a forked worker."""
    if _forked:
        raise ForkedWorker(f"no SQLite in a forked worker (asked for {where})")
    return sqlite3.connect(where, timeout=timeout, check_same_thread=False)
