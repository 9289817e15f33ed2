"""Our pools of forked worker processes: how they are started, and how they end with whoever started them.

Workers are forked as `server.index.forked` forks every child of ours: streams of their own, nothing logged, no
database, and the parent-death signal (it fires when the forking thread ends, and that thread holds the pool for its
whole life). They end with the pool's caller too: when the caller leaves the pool by an exception (an interrupt, a
failure storing a result, a stop asked for), the work not started is dropped and the workers are killed, not waited
for. They only read files and compute, so nothing of theirs is left half-done; and a worker stuck for good cannot
hold its caller with it.
"""

from __future__ import annotations

import contextlib
import multiprocessing
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor

from server.index.forked import forking, in_worker

__all__ = ["abandon", "forking", "in_worker", "worker_pool"]


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
