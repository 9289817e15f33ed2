"""One writer per session, decided atomically.

Before anything is written into a session, its writer is admitted:

1. an exclusive, non-blocking `flock` on `<config>/session-lsp/locks/<sessionId>.lock`, held for the
   whole write (a turn, a rename). The kernel decides between racing writers of ours, in this
   process or any other, CLI or server: exactly one gets it. The winner writes who it is into the
   lock file, so the loser can name the holder. A crashed holder's lock goes with its process.
2. then the real CLI's registry (`storage.livesession`): a live CLI process running the session
   refuses us, and we register ourselves (`kind: bg`) so `claude --resume` refuses while we write.

The loser gets `InUse` (reason `in-use`) naming the holder, and nothing of it is written.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path
from typing import Any

import orjson

from storage.access import open_in_folder
from storage.errors import InUse, WriteFailed
from storage.livesession import LiveMark, ensure_free
from storage.locking import FILE_MODE, open_private_below

HOLDER_WAIT = 0.5
"""Seconds a refused writer waits for the holder to write its identity (it does so right after
taking the lock), so that the refusal names it; a holder that releases meanwhile lets us in."""


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

    def __init__(self, session_id: str, fd: int, mark: LiveMark | None) -> None:
        self.session_id = session_id
        self._fd: int | None = fd
        self._mark = mark

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        if self._mark is not None:
            self._mark.release()
            self._mark = None
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing drops the flock
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
) -> Admission:
    """Admit one writer of `session_id`, or raise `InUse` (another writer of ours, or a live CLI)."""
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
            os.close(fd)
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
        ensure_free(session_id, config_dir)
        mark = None
        if register:
            mark = LiveMark(session_id, cwd, config_dir=config_dir, version=version, entrypoint=entrypoint)
            mark.acquire()
    except OSError as exc:
        os.close(fd)
        raise _cannot_admit(session_id, Path(exc.filename) if exc.filename else path, exc) from exc
    except BaseException:
        os.close(fd)
        raise
    return Admission(session_id, fd, mark)


def _open_lock(config_dir: Path, path: Path) -> int:
    """The lock file at `path` (below `config_dir`), opened by descriptor: the config home by its real path, then
    `session-lsp/locks` (made 0700 where missing) and the file, each taking no symlink (`storage.access`): a folder
    there swapped for a link to another place takes no lock file there (`Unsafe`); a hard-linked lock is refused."""
    folder = open_private_below(config_dir, list(path.relative_to(config_dir).parent.parts), path)
    return open_in_folder(folder, path.name, os.O_RDWR | os.O_CREAT, FILE_MODE, path)


def _cannot_admit(session_id: str, path: Path, exc: OSError) -> WriteFailed:
    """The lock or the live-session record could not be written (a read-only or immutable config home, a full disk):
    the writer is not admitted, and nothing of the session is written."""
    return WriteFailed(
        exc,
        path,
        f"{path}: cannot take the right to write session {session_id} ({exc.strerror or exc}); nothing was written",
    )
