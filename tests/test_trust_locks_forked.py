"""A process forked while one of our writers holds a lock (the index's worker processes are forked from the
language server while its turns write on other threads) must not keep that lock once the writer lets go.

Locks belong to open file descriptions, which a fork shares: before `storage.lockfds`, a child forked during an
append kept the append lock for its whole life (our next append waited for it), and one forked in the middle of
an admission kept the session (its next writer was refused as in use) until it ended."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from turnproc import new_session

from storage import admission
from storage.admission import admit
from storage.errors import InUse
from storage.locking import locked_append_fd

CHILD_LIVES = 20.0
"""Seconds a forked child lives on (a worker reading a large folder): far longer than any check here waits."""
SETTLE = 5.0
"""Seconds a lock may stay held after its writer let go: the child closes its copy as it starts (in
microseconds; a loaded machine may take a while to run it), not when it ends."""


def _fork_sleeper() -> int:
    """Fork a child that only lives on for a while, holding whatever it inherited, as a worker does."""
    child = os.fork()
    if child == 0:
        time.sleep(CHILD_LIVES)
        os._exit(0)
    return child


@contextlib.contextmanager
def _reaped(children: list[int]) -> Iterator[None]:
    try:
        yield
    finally:
        for child in children:
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                os.kill(child, signal.SIGKILL)
                os.waitpid(child, 0)


def _append_lock_free(path: Path) -> bool:
    """Whether another writer of ours can take the append lock within `SETTLE` seconds (a description of its own,
    never waiting on it): a child gives its copies up as it starts, so the lock may still be held for that long."""
    deadline = time.monotonic() + SETTLE
    fd = os.open(path, os.O_RDONLY)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.01)
    finally:
        os.close(fd)


def test_a_child_forked_during_an_append_does_not_hold_the_next_append(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"")
    target = path.resolve()
    children: list[int] = []
    with _reaped(children):
        with locked_append_fd(target) as fd:
            children.append(_fork_sleeper())  # a worker forked while the append is under way
            os.write(fd, b'{"type":"user"}\n')
        assert _append_lock_free(target), "the forked child kept the append lock after the append ended"

        # and an append of ours goes through at once, not after the child ends
        done = threading.Event()

        def append() -> None:
            with locked_append_fd(target) as fd2:
                os.write(fd2, b'{"type":"assistant"}\n')
            done.set()

        threading.Thread(target=append, daemon=True).start()
        assert done.wait(SETTLE), "the next append waited for the forked child"
    assert path.read_bytes().count(b"\n") == 2


def test_a_child_forked_on_another_thread_during_appends_never_keeps_the_lock(tmp_path: Path) -> None:
    """Appends on one thread, forks on another, many times: whenever the appends are over, the lock is free."""
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"")
    target = path.resolve()
    stop = threading.Event()

    def appender() -> None:
        while not stop.is_set():
            with locked_append_fd(target) as fd:
                os.write(fd, b"{}\n")

    children: list[int] = []
    with _reaped(children):
        thread = threading.Thread(target=appender, daemon=True)
        thread.start()
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline and len(children) < 40:
            children.append(_fork_sleeper())
            time.sleep(0.02)
        stop.set()
        thread.join(5.0)
        assert not thread.is_alive()
        assert _append_lock_free(target), f"one of {len(children)} children forked during appends kept the lock"


def test_a_child_forked_in_the_middle_of_an_admission_does_not_keep_the_session(
    projects: Path, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forked after the named lock and the file's lock are taken, before the admission is made of them."""
    sid, path = new_session(projects, work)
    children: list[int] = []
    ensure_free = admission.ensure_free

    def fork_then_check(*args: object, **kwargs: object) -> None:
        children.append(_fork_sleeper())
        ensure_free(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(admission, "ensure_free", fork_then_check)
    with _reaped(children):
        held = admit(sid, config_dir=projects.parent, register=False, transcript=path)
        assert children, "the admission did not go through the point the child is forked at"
        held.release()
        monkeypatch.setattr(admission, "ensure_free", ensure_free)
        try:
            again = admit(sid, config_dir=projects.parent, register=False, transcript=path)
        except InUse as exc:
            pytest.fail(f"the session stayed held by the forked child: {exc}")
        with again:
            assert again.held and again.holds_file
