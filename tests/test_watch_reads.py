"""Reading transcripts costs the watcher nothing: it asks the system for changes only, not for every file
opened and closed unwritten (the first index opens each file several times, on worker processes too)."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest
from watchdog.events import FileSystemEvent

from server.index import ProjectIndex
from server.index.watcher import IndexWatcher, _Hints

CORPUS = Path(__file__).resolve().parent / "corpus" / "claude-code-2.1.328" / "projects"
SHOP = "-Users-me-shop"
CHANGED = "closed"
"""The event of a file closed after writing, which follows the write's own."""


def test_reads_reach_no_handler_and_changes_still_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SESSION_LSP_NO_CACHE", "1")
    projects = tmp_path / "projects"
    shutil.copytree(CORPUS, projects)
    seen: list[tuple[str, str]] = []
    lock = threading.Lock()
    dispatch = _Hints.dispatch

    def recorded(self: _Hints, event: FileSystemEvent) -> None:
        with lock:
            seen.append((event.event_type, str(event.src_path)))
        dispatch(self, event)

    monkeypatch.setattr(_Hints, "dispatch", recorded)
    watcher = IndexWatcher(ProjectIndex(projects), debounce=0.05)
    watcher.start(scan=True)
    try:
        read = sorted((projects / SHOP).glob("*.jsonl"))
        for _ in range(5):
            for p in read:
                p.read_bytes()
        marker = projects / "-Users-me-other" / "1c99f271-c426-49f7-9ae1-2b8728ab22c4.jsonl"
        with marker.open("a") as fh:  # events come in order: once this one is seen, the reads' would be too
            fh.write("\n")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (CHANGED, str(marker)) not in list(seen):
            time.sleep(0.02)
    finally:
        watcher.stop()
    with lock:
        kinds = {kind for kind, _ in seen}
    assert CHANGED in kinds  # the append was seen
    assert not kinds & {"opened", "closed_no_write"}  # 20 reads: no event for any of them
