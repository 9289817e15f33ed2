"""How a process we fork leaves its parent alone and ends with it, and one function run on such a child.

Children are forked, also from the language server, which has threads: a forked child inherits every lock as
another thread held it at the fork. CPython resets the import and logging locks in the child; the standard
streams' locks it does not (the server's reading thread holds stdin's while it waits for a message, and
multiprocessing closes stdin and flushes stdout in the child), so our children get streams of their own on
`os.devnull` and log nothing; they open no database (`storage.sqliteopen`). Each ends with the process that forked
it (Linux's parent-death signal, `server.prctl.die_with_parent`). Imported without `multiprocessing` or
`concurrent.futures`, so a command that forks one child (`server.index.splitread`) does not load them (30 ms).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
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


class ChildFailed(Exception):
    """A forked child ended without giving its whole answer (it raised, was killed or ran out of memory)."""


class Child:
    """`fn()` run on a child forked now, its bytes read back through a pipe; `result()` waits for them. Leave it
    by `close()` (a `with` block): a child not waited for is killed and reaped."""

    def __init__(self, fn: Callable[[], bytes]) -> None:
        read_end, write_end = os.pipe2(os.O_CLOEXEC)
        try:
            with forking():
                pid = os.fork()
                if pid == 0:  # the child, which never returns (nor leaves `forking()`, whose lock is not its own)
                    _serve(fn, read_end, write_end)
        except BaseException:
            os.close(read_end)
            os.close(write_end)
            raise
        os.close(write_end)
        self.pid: int | None = pid
        self._pipe = read_end

    def result(self) -> bytes:
        parts = []
        with os.fdopen(self._pipe, "rb", closefd=False) as pipe:
            while part := pipe.read(1 << 20):
                parts.append(part)
        status = self._reap(kill=False)
        if status != 0:
            raise ChildFailed(f"a forked child ended with status {status}")
        return b"".join(parts)

    def close(self) -> None:
        if self.pid is not None:
            self._reap(kill=True)
        if self._pipe >= 0:
            pipe, self._pipe = self._pipe, -1
            os.close(pipe)

    def _reap(self, *, kill: bool) -> int:
        assert self.pid is not None
        pid, self.pid = self.pid, None
        if kill:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

    def __enter__(self) -> Child:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _serve(fn: Callable[[], bytes], read_end: int, write_end: int) -> None:  # pragma: no cover - in the child
    """The child's whole life: the answer written whole, then out (no cleanup of the parent's: `os._exit`)."""
    status = 1
    try:
        os.close(read_end)
        with memoryview(fn()) as view:
            while view:
                view = view[os.write(write_end, view) :]
        status = 0
    finally:
        os._exit(status)
