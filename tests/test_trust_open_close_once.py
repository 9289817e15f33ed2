"""A descriptor whose close fails is closed once: the number is never closed again, nor another left open.

Linux releases a descriptor's number before the file system's flush can fail (`close(2)` returning EIO, as NFS or a
FUSE file system may): the descriptor is gone. `storage.admission.lock_file` closed it in its body and, when that
close raised, closed the same number again in its `except BaseException` cleanup. In a threaded server the number
may meanwhile be another thread's file (a turn's transcript, a client's socket): that file was closed under it. And
`admit`'s cleanup, when closing the file's lock raised, never closed the session's named lock: the session stayed
in use until the process ended.

A real FUSE mount served by a thread of the test (`tests/rawfuse.py`): its file's byte-range locks and its close
fail as the test says, and while the closing thread waits in `close(2)` another thread opens files, and is given
the number just released, as a threaded server's other thread would be. Before: that thread's file was closed (its
descriptor EBADF), and a second admission of the session was refused as in use, by our own process.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest
from rawfuse import FailingFuse

from storage import admission
from storage.errors import InUse

SID = "0f3c2d1e-aaaa-4bbb-8ccc-123456789abc"
OPENED_AT_FLUSH = 8
"""Files the other thread opens while the close waits: the number just released is the lowest free but for at most
the one folder descriptor `open_decided` held while opening the file, so one of them gets it."""


def _fill_holes() -> list[int]:
    """Descriptors taking every free number below the highest open one, so the next ones opened are predictable."""
    held: list[int] = []
    top = max(int(n) for n in os.listdir("/proc/self/fd"))
    while not held or held[-1] < top:
        held.append(os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC))
    return held


@pytest.fixture
def mounted(tmp_path: Path) -> Iterator[Callable[..., FailingFuse]]:
    if not os.path.exists("/dev/fuse") or os.geteuid() != 0:
        pytest.skip("needs /dev/fuse and root to mount a FUSE file system")
    made: list[FailingFuse] = []

    def mount(**options: object) -> FailingFuse:
        (tmp_path / "mnt").mkdir()
        made.append(FailingFuse(tmp_path / "mnt", f"{SID}.jsonl", **options))  # type: ignore[arg-type]
        return made[-1]

    yield mount
    for fs in made:
        fs.close()


def _others(tmp_path: Path) -> tuple[list[int], Callable[[], None]]:
    """Another thread's files, opened while a close waits (`open_them`), and the file they open."""
    other = tmp_path / "other-threads-file"
    other.write_text("a file of another thread")
    opened: list[int] = []

    def open_them() -> None:
        opened.extend(os.open(other, os.O_RDONLY | os.O_CLOEXEC) for _ in range(OPENED_AT_FLUSH))

    return opened, open_them


def _still_open(fds: list[int], tmp_path: Path) -> list[int]:
    """Those of `fds` still open on the other thread's file."""
    ino = (tmp_path / "other-threads-file").stat().st_ino
    alive = []
    for fd in fds:
        try:
            if os.fstat(fd).st_ino == ino:
                alive.append(fd)
        except OSError:
            pass
    return alive


def test_a_lock_descriptor_whose_close_fails_is_closed_once(
    mounted: Callable[..., FailingFuse], tmp_path: Path
) -> None:
    opened, open_them = _others(tmp_path)

    def at_close(n: int) -> int:
        open_them()
        return errno.EIO

    fs = mounted(setlk_error=errno.EINVAL, on_flush=at_close)  # no byte-range locks here: the descriptor is closed
    held = _fill_holes()
    try:
        assert admission.lock_file(SID, fs.path) is None  # the named lock alone, as where there are no OFD locks
        assert fs.flushes == 1 and len(opened) == OPENED_AT_FLUSH
        assert _still_open(opened, tmp_path) == opened  # before: one of them closed (EBADF), and OSError raised
    finally:
        for fd in held + _still_open(opened, tmp_path):
            os.close(fd)


def test_an_admission_whose_file_lock_fails_to_close_lets_the_session_go(
    mounted: Callable[..., FailingFuse], tmp_path: Path
) -> None:
    config = tmp_path / "config"
    (config / "sessions").mkdir(parents=True)
    # the probe beside the file lock closes fine; the file lock's own descriptor, closed on the refusal, fails
    fs = mounted(on_flush=lambda n: 0 if n == 1 else errno.EIO)
    # a live CLI of the session: the admission is refused after the file was locked
    record = {"pid": os.getppid(), "sessionId": SID, "cwd": str(tmp_path), "kind": "interactive"}
    (config / "sessions" / f"{os.getppid()}.json").write_bytes(orjson.dumps(record))
    with pytest.raises(InUse):  # before: the close's OSError, and the named lock kept
        admission.admit(SID, config_dir=config, transcript=fs.path, register=False)
    (config / "sessions" / f"{os.getppid()}.json").unlink()
    admission.admit(SID, config_dir=config, register=False).release()  # before: InUse, held by this very process
