"""Putting a file in place whole, in a folder walked by `storage.access` (a descriptor, no link followed).

The data is written first under a temporary name beside the file, `.<name>.tmp`, then linked (never over an
existing file) or renamed (over it) to its own name: a writer stopped midway, even by SIGKILL, leaves at most that
temporary file, never part of the data under the file's own name, and no reader (ours, or `claude --resume`, which
lists `<uuid>.jsonl` only) takes it for a session. The temporary name is the same for every writer of the file,
and whoever writes holds an exclusive `flock` on it while it exists, so the next writer of the same file takes over
what a killed one left (its lock died with it) and removes it; a live writer's is never touched (`InUse`).

What is found under the temporary name is never followed nor written through: a symlink there is `Unsafe`, and so
is anything but a regular file of ours with one name (a hard link of a file elsewhere would be truncated with it; a
file of another user, taken over and renamed, would leave the data in a file that user owns; a folder or a socket
cannot be opened for writing).

A file that must not exist yet (a fork) is written by `put_new` into a file of no name (Linux `O_TMPFILE`), linked to
its name once whole: a writer stopped midway leaves nothing at all, the kernel frees such a file with its last
descriptor. Where the file system makes none, it is written as `put_whole` writes.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat

from storage import lockfds
from storage.errors import InUse, InvalidArgument, Unsafe

_TEMP = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def temp_name(name: str) -> str:
    """The temporary name `name` is written under before it is put in place."""
    return f".{name}.tmp"


def write_all(fd: int, data: bytes) -> None:
    """Write all of `data` at the descriptor's position (`os.write` may take only part of it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def is_temp_name(name: str) -> bool:
    """Whether `name` is some file's `temp_name`."""
    return name.startswith(".") and name.endswith(".tmp") and len(name) >= len(".x.tmp")


def put_whole(
    folder: int, name: str, data: bytes, path: os.PathLike[str] | str, *, replace: bool, fsync: bool = False
) -> None:
    """Make `name`, in the folder open as `folder` (left open), hold `data` (mode 0600): written under `temp_name`,
    then renamed over whatever `name` is (`replace`) or linked to it (else `FileExistsError` when something is
    already there, left untouched). `path` names the file in errors. The temporary name is gone afterwards,
    whatever happens, unless this process dies between the two steps (see the module docstring). With `fsync`, the
    data and then the folder are flushed to the disk."""
    if is_temp_name(name):  # it would be taken over, and removed, by the next write of the file it names
        raise InvalidArgument(f"{path}: {name} has the form of a temporary name (.<name>.tmp); not written")
    tmp = temp_name(name)
    fd = _own_temp(folder, tmp, path)
    try:
        try:
            os.ftruncate(fd, 0)
            write_all(fd, data)
            if fsync:
                os.fsync(fd)
            if replace:
                os.rename(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
            else:
                os.link(tmp, name, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
        finally:
            with contextlib.suppress(FileNotFoundError):
                _remove_own(folder, tmp, fd)
    finally:
        lockfds.close(fd)  # drops the lock
    if fsync:
        os.fsync(folder)


_NAMELESS = getattr(os, "O_TMPFILE", 0)
"""`O_TMPFILE` (0: not Linux)."""


def put_new(folder: int, name: str, data: bytes, path: os.PathLike[str] | str, *, fsync: bool = False) -> None:
    """Make `name`, new in the folder open as `folder` (left open), hold `data` (mode 0600), or leave nothing: written
    into a file of no name, then linked to `name` whole (`FileExistsError` when something is already there, left
    untouched). A write(2) ends part way when the process gets a fatal signal (SIGKILL, `os._exit` on another
    thread): a file made under its own name first, or a temporary one, would be left torn. `fsync` as `put_whole`."""
    try:
        fd = os.open(".", _NAMELESS | os.O_RDWR | os.O_CLOEXEC, 0o600, dir_fd=folder) if _NAMELESS else -1
    except OSError as exc:  # a file system, or a kernel (before 3.11), that makes no file without a name
        if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
            raise
        fd = -1
    if fd < 0 or not os.path.isdir("/proc/self/fd"):  # linked by its name there: without /proc, none
        if fd >= 0:
            os.close(fd)
        put_whole(folder, name, data, path, replace=False, fsync=fsync)
        return
    try:
        os.fchmod(fd, 0o600)
        write_all(fd, data)
        if fsync:
            os.fsync(fd)
        os.link(f"/proc/self/fd/{fd}", name, dst_dir_fd=folder, follow_symlinks=True)
    finally:
        os.close(fd)
    if fsync:
        os.fsync(folder)


def _own_temp(folder: int, tmp: str, path: os.PathLike[str] | str) -> int:
    """The temporary file, created or taken over from a writer that died, locked, 0600, a regular file of one name
    that is still the one under `tmp`."""
    try:
        fd = lockfds.open_locked(lambda: os.open(tmp, _TEMP, 0o600, dir_fd=folder))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Unsafe(f"{path}: its temporary file {tmp} is a symbolic link; nothing written") from None
        if exc.errno in (errno.EISDIR, errno.ENXIO):  # a folder, a UNIX socket
            raise Unsafe(f"{path}: its temporary file {tmp} is not a regular file; nothing written") from None
        raise
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InUse(f"{path} is being written by another process; not written") from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            raise Unsafe(f"{path}: its temporary file {tmp} is not a regular file of one name; nothing written")
        if st.st_uid != os.geteuid():
            raise Unsafe(f"{path}: its temporary file {tmp} belongs to user {st.st_uid}; nothing written")
        try:
            now = os.stat(tmp, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            now = None
        if now is None or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            raise InUse(f"{path} was written by another process meanwhile; not written")
        os.fchmod(fd, 0o600)
        os.set_blocking(fd, True)
    except BaseException:
        lockfds.close(fd)
        raise
    return fd


def _remove_own(folder: int, tmp: str, fd: int) -> None:
    """Remove `tmp` if it is still the file open (and locked) as `fd`."""
    st = os.fstat(fd)
    now = os.stat(tmp, dir_fd=folder, follow_symlinks=False)
    if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
        os.unlink(tmp, dir_fd=folder)
