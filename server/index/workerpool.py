"""Our forked worker processes: how they are started, and how they end with whoever started them.

Workers are forked, also from the language server, which has threads: a forked child inherits every lock as
another thread held it at the fork. CPython resets the import and logging locks in the child; the standard
streams' locks it does not (the server's reading thread holds stdin's while it waits for a message, and
multiprocessing closes stdin and flushes stdout in the child), so our workers get streams of their own on
`os.devnull` and log nothing; they open no database (`storage.sqliteopen`).

A worker ends with the process that forked it (Linux's parent-death signal, `server.prctl.die_with_parent`: it fires
when the forking thread ends, and that thread holds the pool for its whole life), and with the pool's caller: when the
caller leaves the pool by an exception (an interrupt, a failure storing a result, a stop asked for), the work not
started is dropped and the workers are killed, not waited for. They only read files and compute, so nothing of
theirs is left half-done; and a worker stuck for good cannot hold its caller with it.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from server.prctl import die_with_parent


class _Forking:
    """Set while our workers are forked: a child forked then leaves the parent's standard streams alone."""

    def __init__(self) -> None:
        self.on = False
        self.lock = threading.Lock()
        self.kept: list[Any] = []
        """The parent's streams in a worker: never closed or flushed there, nor freed (which would close them)."""
        self.parent = 0
        """The forking process."""
        self.worker = False
        """This process is one of our workers."""

    def __enter__(self) -> None:
        self.lock.acquire()
        self.parent = os.getpid()
        self.on = True

    def __exit__(self, *exc: object) -> None:
        self.on = False
        self.lock.release()

    def in_child(self) -> None:
        if not self.on:
            return
        self.on = False
        self.worker = True
        die_with_parent(self.parent)  # first: a worker stuck in what follows still ends with its parent
        self.lock = threading.Lock()  # held by the parent's forking thread: a new one here
        self.kept.extend((sys.stdin, sys.stdout, sys.stderr))
        sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - the worker's for its whole life
        sys.stdout = sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
        logging.disable(logging.CRITICAL)
        # the descriptors too: a worker holding the server's stdio pipes would keep the editor waiting for their end
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(null)


_FORKING = _Forking()
os.register_at_fork(after_in_child=_FORKING.in_child)


def in_worker() -> bool:
    """This process is one of our forked workers."""
    return _FORKING.worker


@contextlib.contextmanager
def forking() -> Iterator[None]:
    """Held around the pool's first `submit` (which forks every worker of a fork-context pool): the children
    forked meanwhile are our workers."""
    with _FORKING:
        yield


@contextlib.contextmanager
def worker_pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    """A pool of `workers` forked processes (forked at the first `submit`, which the caller makes under
    `forking()`). Left normally, it waits for the work submitted; left by an exception, it kills the workers."""
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
    try:
        yield pool
    except BaseException:
        abandon(pool)
        raise
    pool.shutdown(wait=True)


def abandon(pool: ProcessPoolExecutor) -> None:
    """Kill the workers (a stuck one too) and drop the work not started: the pool then winds down at once, every
    future not done failing as broken."""
    for process in list((pool._processes or {}).values()):
        with contextlib.suppress(OSError, ValueError):
            process.kill()
    pool.shutdown(wait=True, cancel_futures=True)
