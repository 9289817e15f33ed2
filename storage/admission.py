"""One writer per session, decided atomically.

Before anything is written into a session, its writer is admitted:

1. an exclusive, non-blocking `flock` on `<config>/session-lsp/locks/<sessionId>.lock`, held for the
   whole write (a turn, a rename). The kernel decides between racing writers of ours, in this
   process or any other, CLI or server: exactly one gets it. The winner writes who it is into the
   lock file, so the loser can name the holder. A crashed holder's lock goes with its process.
2. when the session's transcript exists (the caller passes the path `storage.access.resolve_target`
   decided), an exclusive open-file-description lock on the file itself (Linux `F_OFD_SETLK`, one byte
   at `FILE_LOCK_AT`, far past any real end), held as long as the named lock. The named lock is keyed
   on the config home as the caller names it, so two names of one projects folder (a symlinked
   `~/.claude/projects`, a bind mount) give two lock folders; the file's lock is the same under every
   name. A second byte at `FILE_LOCK_AT + 1 + pid` names the holder (`F_OFD_GETLK` reports no pid, but
   the lock it finds, and so its place). OFD locks are independent of the `flock` our appends take
   (`storage.locking`) and the real CLI takes none: both append as before. Where the file system
   emulates `flock` with byte-range locks (NFS, SMB), our own appends would wait for our own lock; that
   is probed at admission and the file lock left out there. Not Linux, or a kernel without OFD locks
   (before 3.15): the named lock only.
3. then the real CLI's registry (`storage.livesession`): a live CLI process running the session
   refuses us, and we register ourselves (`kind: bg`) so `claude --resume` refuses while we write.

The loser gets `InUse` (reason `in-use`) naming the holder, and nothing of it is written.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import struct
import time
from pathlib import Path
from typing import Any

import orjson

from storage import lockfds
from storage.access import open_decided, open_in_folder
from storage.errors import InUse, NotFound, SessionLspError, WriteFailed
from storage.livesession import LiveMark, ensure_free
from storage.locking import FILE_MODE, open_private_below

HOLDER_WAIT = 0.5
"""Seconds a refused writer waits for the holder to write its identity (it does so right after
taking the lock), so that the refusal names it; a holder that releases meanwhile lets us in."""


FILE_LOCK_AT = 1 << 62
"""The byte of a transcript whose OFD lock is the right to write it: no real file reaches it (4 EiB)."""
NAME_SPAN = 1 << 22
"""Pids the naming byte can say (Linux's `PID_MAX_LIMIT`): the holder's pid `p` locks `FILE_LOCK_AT + 1 + p`."""
_OFD_SETLK: int | None = getattr(fcntl, "F_OFD_SETLK", None)
_OFD_GETLK: int | None = getattr(fcntl, "F_OFD_GETLK", None)
_FLOCK = "@hhqqi0q"
"""`struct flock` as the kernel takes it: l_type, l_whence, l_start, l_len (off_t: 64 bits, Python is built with
large files), l_pid, native alignment and the trailing padding to the struct's alignment (32 bytes on x86-64)."""


def lock_path(config_dir: Path, session_id: str) -> Path:
    return config_dir / "session-lsp" / "locks" / f"{session_id.lower()}.lock"


def _holder(fd: int) -> dict[str, Any]:
    try:
        data = orjson.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, orjson.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


class Admission:
    """The right to write one session, from `admit()` until `release()`."""

    def __init__(self, session_id: str, fd: int, mark: LiveMark | None, file_fd: int | None = None) -> None:
        self.session_id = session_id
        self._fd: int | None = fd
        self._mark = mark
        self._file_fd = file_fd

    @property
    def holds_file(self) -> bool:
        """Whether the transcript itself is locked (`FILE_LOCK_AT`), not only the named lock."""
        return self._file_fd is not None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def hold_file(self, transcript: Path) -> bool:
        """Lock the session's file too once it exists (a new session's, made by the admitted writer's first
        append): whether it is held now. Best effort: a writer that came through another name of its folder in
        between keeps it, and the admitted writer's check of its own appends' ends stops it
        (`storage.writequeue`)."""
        if self._fd is None:
            return False
        if self._file_fd is None:
            with contextlib.suppress(OSError, SessionLspError):
                self._file_fd = lock_file(self.session_id, transcript)
        return self._file_fd is not None

    def release(self) -> None:
        if self._mark is not None:
            self._mark.release()
            self._mark = None
        if self._file_fd is not None:
            lockfds.close(self._file_fd)  # the last descriptor of its open file description: the OFD locks go
            self._file_fd = None
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            lockfds.close(self._fd)  # closing drops the flock
            self._fd = None

    def __enter__(self) -> Admission:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def admit(
    session_id: str,
    *,
    config_dir: Path,
    cwd: str = "",
    register: bool = True,
    version: str = "",
    entrypoint: str = "session-lsp",
    transcript: Path | None = None,
    shared: bool = False,
) -> Admission:
    """Admit one writer of `session_id`, or raise `InUse` (another writer of ours, or a live CLI).

    `transcript`: the session's file when it exists, the real path `storage.access.resolve_target` decided (to
    write): it is locked too, under whatever name of its folder another writer came (see the module docstring),
    opened by `storage.access.open_decided` (no symlink on the way, never created or truncated, a hard-linked
    file refused, `Unsafe`). `shared`: a reader that keeps writers out while it reads (a push to the store)
    takes a shared lock on it instead: it is refused while a writer holds the file, and refuses writers, but not
    other readers."""
    path = lock_path(config_dir, session_id)
    try:
        fd = _open_lock(config_dir, path)
    except OSError as exc:
        raise _cannot_admit(session_id, path, exc) from exc
    deadline = time.monotonic() + HOLDER_WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            holder = _holder(fd)
            if not holder and time.monotonic() < deadline:
                # the winner has the lock but has not written who it is yet (or is just releasing it)
                time.sleep(0.005)
                continue
            lockfds.close(fd)
            who = holder.get("entrypoint") or "session-lsp"
            pid = holder.get("pid", "?")
            raise InUse(
                f"Session ID {session_id} is already in use by another {who} writer (pid {pid}); "
                "try again when it ends",
                holder,
            ) from None
    try:
        me = {"pid": os.getpid(), "entrypoint": entrypoint, "startedAt": int(time.time() * 1000), "cwd": cwd}
        os.ftruncate(fd, 0)
        os.pwrite(fd, orjson.dumps(me), 0)
    except OSError as exc:
        lockfds.close(fd)
        raise _cannot_admit(session_id, path, exc) from exc
    file_fd = None
    try:
        if transcript is not None:
            file_fd = lock_file(session_id, transcript, shared=shared)
        ensure_free(session_id, config_dir)
        mark = None
        if register:
            mark = LiveMark(session_id, cwd, config_dir=config_dir, version=version, entrypoint=entrypoint)
            mark.acquire()
    except BaseException as exc:
        # each closed once, whatever the other's close did (a close that fails still releases the descriptor): the
        # file's lock failing to close kept the named lock, and the session in use, until the process ended
        if file_fd is not None:
            lockfds.close_quietly(file_fd)
        lockfds.close_quietly(fd)
        if isinstance(exc, OSError) and not isinstance(exc, WriteFailed):
            raise _cannot_admit(session_id, Path(exc.filename) if exc.filename else path, exc) from exc
        raise
    return Admission(session_id, fd, mark, file_fd)


def _flock(kind: int, start: int, length: int = 1) -> bytes:
    return struct.pack(_FLOCK, kind, os.SEEK_SET, start, length, 0)


def lock_file(session_id: str, transcript: Path, *, shared: bool = False) -> int | None:
    """A descriptor of `transcript` holding its OFD lock at `FILE_LOCK_AT` (exclusive, or `shared`), and the byte
    naming this process; None where there are no OFD locks (not Linux, an older kernel) or they would hold our own
    appends back (a file system emulating `flock` with them): the named lock alone then. Another holder, under any
    name of the file, raises `InUse` naming its pid when its naming byte tells it."""
    if _OFD_SETLK is None or _OFD_GETLK is None:
        return None
    kind = fcntl.F_RDLCK if shared else fcntl.F_WRLCK
    try:
        # read and write: the shared lock needs read access, the exclusive one write access, the probe for the
        # holder's name either; never created (no O_CREAT) nor cut (no O_TRUNC); appending (nothing is written through
        # it), as every writer opens it: an append-only file (`chattr +a`) refuses a writable open without O_APPEND
        fd = lockfds.open_locked(lambda: open_decided(transcript, os.O_RDONLY if shared else os.O_RDWR | os.O_APPEND))
    except FileNotFoundError as exc:
        raise NotFound(f"no session file {transcript} (moved or deleted since it was found); nothing written") from exc
    except OSError as exc:  # a read-only file, an I/O error
        raise _cannot_admit(session_id, transcript, exc) from exc
    # `held` until closed, by the body or by the cleanup, never both: a close that raised (EIO) had released the
    # number, which another thread's file may have had by the time the cleanup closed it again
    held: int | None = fd
    try:
        try:
            fcntl.fcntl(fd, _OFD_SETLK, _flock(kind, FILE_LOCK_AT))
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                held = None
                lockfds.close_quietly(fd)  # EINVAL: no OFD locks here; the named lock alone
                return None
            pid = _file_holder(fd, kind)
            who = f"pid {pid}" if pid is not None else "a process that cannot be named"
            raise InUse(
                f"Session ID {session_id} is already in use: it is being written through another path of its "
                f"folder (a linked or mounted projects folder, or another config home), by {who}; try again when "
                "it ends",
                {"pid": pid, "path": str(transcript)} if pid is not None else {"path": str(transcript)},
            ) from None
        pid = os.getpid()
        if pid < NAME_SPAN:
            with contextlib.suppress(OSError):
                fcntl.fcntl(fd, _OFD_SETLK, _flock(kind, FILE_LOCK_AT + 1 + pid))
        if not _flock_is_free_beside(fd):
            held = None
            lockfds.close_quietly(fd)
            return None
    except BaseException:
        if held is not None:
            lockfds.close_quietly(held)
        raise
    return fd


def _file_holder(fd: int, kind: int) -> int | None:
    """The pid the holder of the file's lock wrote as its naming byte (it does so right after taking the lock;
    waited for up to `HOLDER_WAIT`); None when it never did (a pid past `NAME_SPAN`) or let go meanwhile."""
    assert _OFD_GETLK is not None
    deadline = time.monotonic() + HOLDER_WAIT
    while True:
        try:
            got = struct.unpack(_FLOCK, fcntl.fcntl(fd, _OFD_GETLK, _flock(kind, FILE_LOCK_AT + 1, NAME_SPAN)))
        except OSError:
            return None
        if got[0] != fcntl.F_UNLCK:
            return int(got[2]) - FILE_LOCK_AT - 1
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.005)


def _flock_is_free_beside(fd: int) -> bool:
    """Whether another open file description of the file may still take an exclusive `flock` while `fd` holds its
    OFD lock, as our appends do (`storage.locking`): not where `flock` is emulated with byte-range locks over the
    whole file (NFS, SMB). Probed with a description of its own (`/proc/self/fd`), never waiting; a `flock` held
    by someone else right now reads as "no" too, which only costs the file's lock, never a wait."""
    try:
        probe = lockfds.open_locked(
            lambda: os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        )
    except OSError:
        return False
    try:
        if os.fstat(probe)[1:3] != os.fstat(fd)[1:3]:
            return False
        fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        lockfds.close_quietly(probe)  # with the flock, if it was taken; read-only, nothing to lose


def _open_lock(config_dir: Path, path: Path) -> int:
    """The lock file at `path` (below `config_dir`), opened by descriptor: the config home by its real path, then
    `session-lsp/locks` (made 0700 where missing) and the file, each taking no symlink (`storage.access`): a folder
    there swapped for a link to another place takes no lock file there (`Unsafe`); a hard-linked lock is refused."""
    folder = open_private_below(config_dir, list(path.relative_to(config_dir).parent.parts), path)
    return lockfds.open_locked(lambda: open_in_folder(folder, path.name, os.O_RDWR | os.O_CREAT, FILE_MODE, path))


def _cannot_admit(session_id: str, path: Path, exc: OSError) -> WriteFailed:
    """The lock or the live-session record could not be written (a read-only or immutable config home, a full disk):
    the writer is not admitted, and nothing of the session is written."""
    return WriteFailed(
        exc,
        path,
        f"{path}: cannot take the right to write session {session_id} ({exc.strerror or exc}); nothing was written",
    )
