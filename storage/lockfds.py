"""Descriptors that carry a lock, which a forked child must not keep.

A `flock` or an OFD lock belongs to an open file description, and a forked child shares every description its
parent has open: a child forked while a writer of ours holds one (the index's worker processes are forked from
the language server, whose turns write on other threads) keeps the lock after the writer closes its descriptor,
until the child ends. Our next append then waited on the append lock for as long as the worker read, and the
session refused its next writer as in use.

So every descriptor that takes such a lock is opened and closed here (`open_locked`, `close`): the forking thread
waits while one is being opened (the fork's `before` hook takes the same lock), so none is ever open and not yet
known, and the child closes its copies of all of them first thing: the lock is free again as soon as the child
has started, not when it ends. A process started by `subprocess` runs no fork
hook, and needs none: these descriptors are close-on-exec.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)
_LOCK = threading.Lock()
_OPEN: set[int] = set()


def open_locked(opener: Callable[[], int]) -> int:
    """The descriptor `opener` opens, known from then on as one that carries a lock (taken by the caller next)."""
    with _LOCK:
        fd = opener()
        _OPEN.add(fd)
        return fd


def close(fd: int) -> None:
    """Close a descriptor `open_locked` gave (its locks go with the last descriptor of its description). Raised or
    not, the descriptor is gone: Linux releases its number before the file system's flush can fail (EIO from NFS or
    FUSE), and another thread may be given that number at once, so a failed close is never tried again."""
    with _LOCK:
        _OPEN.discard(fd)
        os.close(fd)


def close_quietly(fd: int) -> None:
    """`close` for a cleanup, which has an error of its own to raise, or nothing written through `fd` to lose: a
    failure is logged, not raised, and the descriptor is gone all the same (`close`)."""
    try:
        close(fd)
    except OSError as exc:
        log.warning("closing a lock's descriptor failed (%s); it is closed all the same", exc)


def _in_child() -> None:
    global _LOCK
    for fd in _OPEN:
        with contextlib.suppress(OSError):
            os.close(fd)
    _OPEN.clear()
    _LOCK = threading.Lock()  # the forking thread's hold on it is the child's: a fresh one


os.register_at_fork(before=lambda: _LOCK.acquire(), after_in_parent=lambda: _LOCK.release(), after_in_child=_in_child)
