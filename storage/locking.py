"""Advisory per-file locks so that our own writers never interleave a line.

Every append of ours holds an exclusive `flock` on the target file for the whole write. Other
processes of ours (and threads with their own descriptors) wait; programs that do not lock (the
real CLI) are not held back, which is why we also refuse sessions that a live CLI owns
(`storage.livesession`).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager

from storage import lockfds
from storage.access import open_decided, walk_folders

FILE_MODE = 0o600
DIR_MODE = 0o700


@contextmanager
def locked_append_fd(
    path: os.PathLike[str] | str, *, made: list[str] | None = None, create: bool = True
) -> Iterator[int]:
    """An `O_APPEND` descriptor on `path` (created 0600 unless `create` is false: then a missing file or
    folder raises `FileNotFoundError`), exclusively `flock`ed while open. `path` is a decided real path
    (`storage.access`), opened by `open_decided`: a folder or the file swapped for a symlink since, a
    FIFO put in its place or a hard link is refused. With `made`, missing folders are created 0700 on
    the way and listed there."""
    flags = os.O_RDWR | os.O_APPEND | (os.O_CREAT if create else 0)
    fd = lockfds.open_locked(lambda: open_decided(path, flags, FILE_MODE, made=made if create else None))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        lockfds.close(fd)  # closing drops the lock


def make_private_dirs(path: os.PathLike[str] | str) -> list[str]:
    """`mkdir -p` giving every folder it creates mode 0700 (existing ones are left alone);
    returns the folders created, outermost first."""
    missing: list[str] = []
    cur = os.path.abspath(path)
    while not os.path.isdir(cur):
        missing.append(cur)
        parent = os.path.dirname(cur)
        if parent == cur:
            break
        cur = parent
    created = []
    for d in reversed(missing):
        try:
            os.mkdir(d, DIR_MODE)
            created.append(d)
        except FileExistsError:
            pass
    return created


def open_private_below(home: os.PathLike[str] | str, names: list[str], path: os.PathLike[str] | str) -> int:
    """A descriptor of the folder `names` leads to below `home` (a config home): `home` by its real path (made
    0700 where missing; a home the user reached through a link is followed), then each folder below it opened
    taking no symlink and made 0700 where missing (`storage.access.walk_folders`): a folder there swapped for a
    link to another place is `Unsafe`, and nothing is made there. `path` names the file in errors."""
    make_private_dirs(home)
    real = os.path.realpath(home)
    return walk_folders(os.open(real, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), names, path, made=[], at=real)
