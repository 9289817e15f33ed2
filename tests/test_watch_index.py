"""The watcher keeps the index live: an append, a truncation and a deletion are followed."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest

from server.index import ChangeSet, ProjectIndex
from server.index.watcher import IndexWatcher

CORPUS = Path(__file__).resolve().parent / "corpus" / "claude-code-2.1.328" / "projects"
SHOP = "-Users-me-shop"
PAR = "11111111-1111-4111-8111-111111111111"
FORK = "d864acd2-d28b-43ce-b430-2208a10860fe"


def wait_for(cond, timeout: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


@pytest.mark.parametrize("polling", [False, True])
def test_watcher_follows_append_truncate_delete(tmp_path: Path, polling: bool) -> None:
    projects = tmp_path / "projects"
    shutil.copytree(CORPUS, projects)
    idx = ProjectIndex(projects)
    seen: list[ChangeSet] = []
    lock = threading.Lock()

    def on_change(c: ChangeSet) -> None:
        with lock:
            seen.append(c)

    w = IndexWatcher(idx, on_change, polling=polling, debounce=0.05, poll_interval=0.1)
    w.start()
    try:
        main = projects / SHOP / f"{PAR}.jsonl"
        n = len(idx.files[main].transcript.rows)
        with open(main, "ab") as fh:
            fh.write(b'{"type":"tag","tag":"live","sessionId":"%s"}\n' % PAR.encode())
        assert wait_for(lambda: len(idx.files[main].transcript.rows) == n + 1)

        fork = projects / SHOP / f"{FORK}.jsonl"
        keep = b"".join(fork.read_bytes().splitlines(keepends=True)[:7])
        with open(fork, "r+b") as fh:
            fh.truncate(len(keep))
        assert wait_for(lambda: len(idx.files[fork].transcript.rows) == 7)

        other = projects / "-Users-me-other" / "1c99f271-c426-49f7-9ae1-2b8728ab22c4.jsonl"
        other.unlink()
        assert wait_for(lambda: other not in idx.files)

        new = projects / "-Users-me-new" / "33333333-3333-4333-8333-333333333333.jsonl"
        new.parent.mkdir()
        new.write_bytes(main.read_bytes()[:2000].rsplit(b"\n", 1)[0] + b"\n")
        assert wait_for(lambda: new in idx.files and idx.files[new].transcript.rows)
        with lock:
            assert any(main in c.changed for c in seen)
            assert any(other in c.removed for c in seen)
    finally:
        w.stop()


def test_observer_starts_before_the_scan(tmp_path: Path) -> None:
    """A file written while the first scan runs is still picked up."""
    projects = tmp_path / "projects"
    shutil.copytree(CORPUS, projects)
    idx = ProjectIndex(projects)
    main = projects / SHOP / f"{PAR}.jsonl"

    def progress(done: int, total: int) -> None:
        if done == 1:
            with open(main, "ab") as fh:
                fh.write(b'{"type":"tag","tag":"during scan","sessionId":"%s"}\n' % PAR.encode())

    w = IndexWatcher(idx, debounce=0.05)
    w.start(progress=progress)
    try:
        assert wait_for(lambda: idx.files[main].offset == main.stat().st_size)
    finally:
        w.stop()
