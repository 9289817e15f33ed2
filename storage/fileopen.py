"""Opening the files kept in the projects folder for reading: the one place that does.

A transcript is opened by `open_regular`: never blocking (a FIFO is opened non-blocking, then refused), a
path `storage.access` decided (a `DecidedPath`) through `open_decided`, folder by folder from `/` with no symlink
followed, and a path below a projects folder discovery read (`storage.confined`) by `open_inside`: a file or folder
swapped for a link leading out after the decision or the discovery leads nowhere. A small file kept beside a
transcript (a subagent's `.meta.json`) is read by `read_sidecar`: only as a regular file in its own right.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from storage.access import DecidedPath, open_decided
from storage.confined import LeadsOut, NotARegularFile, open_inside, root_of

__all__ = [
    "LeadsOut",
    "NotARegularFile",
    "file_kind",
    "open_regular",
    "open_no_magic_links",
    "opened_path",
    "read_sidecar",
    "read_small",
    "read_small_opened",
    "why_not_regular",
]


def file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"


def why_not_regular(path: Path | str) -> str | None:
    """None for a regular file (symlinks followed); else why it is skipped (a FIFO, a symlink
    loop, ...). Never opens the file, so a FIFO cannot block."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return "a symlink loop" if exc.errno == errno.ELOOP else (exc.strerror or str(exc)).lower()
    return None if stat.S_ISREG(mode) else file_kind(mode)


def open_regular(path: Path | str) -> BinaryIO:
    """Open a transcript for reading; `NotARegularFile` for anything else. Opening never blocks
    (a FIFO is opened non-blocking, then refused). Every transcript is opened for reading here: a path
    `storage.access` decided (a `DecidedPath`) is opened by `open_decided`, following no symlink, and one below a
    projects folder by `storage.confined.open_inside`, following no link that leads out of it."""
    if isinstance(path, DecidedPath):
        return os.fdopen(open_decided(path, os.O_RDONLY), "rb")
    named = root_of(path)
    if named is not None:
        return os.fdopen(open_inside(path, os.O_RDONLY, named), "rb")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotARegularFile(f"{path}: {file_kind(mode)}, not a transcript file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


SIDECAR_BYTES = 64 * 1024
"""A sidecar file (a subagent's `.meta.json`) larger than this is not read."""


def read_small(path: Path | str, limit: int, *, follow_links: bool = False) -> bytes | None:
    """The bytes of a regular file of at most `limit` bytes, or None for anything else: a FIFO or device is never
    read (opening never blocks), and a symlink is followed only with `follow_links`; below a projects folder
    (`storage.confined`) no link leading out of it is followed on the way."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_links else os.O_NOFOLLOW)
    named = root_of(path)
    try:
        fd = os.open(path, flags) if named is None else open_inside(path, os.O_RDONLY, named, follow_last=follow_links)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        data = os.read(fd, limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if len(data) <= limit else None


def read_small_opened(path: Path | str, limit: int, accept: Callable[[Path], bool]) -> tuple[Path, bytes] | None:
    """The real path and the bytes of the file `path` leads to (every link followed), decided on what was opened, not
    on a look at the path before: it is opened first (never blocking, never taking a terminal), then its real path is
    read from the descriptor (`opened_path`) and must be accepted by `accept`, and the descriptor must be a regular
    file of at most `limit` bytes; else None, and nothing is read. So a folder on the way swapped for a link (into
    `/proc`, out of a checkout) between a check and the open is judged where it led. No magic link is followed
    (`open_no_magic_links`): `/proc/self/cwd/.env` is a file of the reading process, not of the path's."""
    try:
        fd = open_no_magic_links(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        real = opened_path(fd, st)
        if real is None or not accept(real):
            return None
        data = os.read(fd, limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return (real, data) if len(data) <= limit else None


_SYS_OPENAT2 = 437
"""`openat2`'s number: the same on every Linux architecture (Linux 5.6)."""
_RESOLVE_NO_MAGICLINKS = 0x02
_AT_FDCWD = -100


def open_no_magic_links(path: Path | str, flags: int) -> int:
    """`os.open(path, flags)` (no `O_CREAT`) following no magic link on the way: the kernel's per-process links
    (`/proc/<pid>/cwd`, `root`, `exe`, `fd/N`, `map_files/...`) lead to whatever the *opening* process has there (its
    working directory, its open files), whose real path names no `/proc` file, so a decision on the real path cannot
    see them; `ELOOP` instead (Linux `openat2` `RESOLVE_NO_MAGICLINKS`). Plain symlinks, `/proc/self` among them, are
    followed. Where there is no `openat2` (not Linux, before 5.6, a seccomp filter refusing it), a plain open."""
    if sys.platform != "linux":
        return os.open(path, flags)
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    how = (ctypes.c_uint64 * 3)(flags, 0, _RESOLVE_NO_MAGICLINKS)  # struct open_how {flags, mode, resolve}
    name = os.fsencode(path)
    fd = int(
        libc.syscall(
            ctypes.c_long(_SYS_OPENAT2),
            ctypes.c_int(_AT_FDCWD),
            ctypes.c_char_p(name),
            ctypes.byref(how),
            ctypes.c_size_t(ctypes.sizeof(how)),
        )
    )
    if fd >= 0:
        return fd
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EPERM):  # no openat2 here, or a seccomp filter refusing it (EPERM in older ones)
        return os.open(path, flags)
    raise OSError(err, os.strerror(err), os.fsdecode(name))


def opened_path(fd: int, st: os.stat_result | None = None) -> Path | None:
    """The real path of the file open as `fd` (`st`: its `fstat`), as the kernel names it (Linux
    `/proc/self/fd/N`, macOS `F_GETPATH`), if that path names the same file now; None for a file that has no such
    name (deleted, a memfd or pipe reached through a `/proc/<pid>/fd` link, another process's root) or where the
    system cannot tell."""
    st = st or os.fstat(fd)
    try:
        if sys.platform == "darwin":
            import fcntl

            text = fcntl.fcntl(fd, fcntl.F_GETPATH, b"\0" * 1024).rstrip(b"\0").decode(errors="surrogateescape")
        else:
            text = os.readlink(f"/proc/self/fd/{fd}")
        now = os.stat(text) if text.startswith("/") else None
    except OSError:
        return None
    if now is None or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
        return None
    return Path(text)


def read_sidecar(path: Path | str, limit: int = SIDECAR_BYTES) -> bytes | None:
    """The bytes of a small file kept beside a transcript (`read_small`), never through a symlink, which may lead
    out of the projects folder."""
    return read_small(path, limit)
