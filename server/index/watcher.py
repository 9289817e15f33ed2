"""Keep a `ProjectIndex` live with watchdog: events are hints, each update reads to end of file."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from watchdog.events import FileSystemEvent, PatternMatchingEventHandler
from watchdog.observers import Observer
from watchdog.observers.polling import PollingObserver

from server.index.store import ChangeSet, ProjectIndex, norm

PATTERNS = ["**/*.jsonl", "**/*.meta.json"]
"""watchdog 7 matches the whole path (`PurePath.full_match`), hence the `**/`."""
log = logging.getLogger(__name__)


class _Hints(PatternMatchingEventHandler):
    def __init__(self, sink: Callable[[Path], None]) -> None:
        super().__init__(patterns=PATTERNS, ignore_directories=False, case_sensitive=True)
        self.sink = sink

    def dispatch(self, event: FileSystemEvent) -> None:
        if event.is_directory:
            if event.event_type in ("deleted", "moved"):
                self.sink(Path(os.fsdecode(event.src_path)))  # files below it left with it
            if event.event_type in ("created", "moved"):
                self.sink(Path(os.fsdecode(event.dest_path or event.src_path)))
            return
        super().dispatch(event)

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        for raw in (event.src_path, event.dest_path):
            if raw:
                self.sink(Path(os.fsdecode(raw)))


class IndexWatcher:
    """Observe the projects folder recursively and apply debounced updates to the index.

    `on_change` is called from the watcher's thread with what changed. `polling=True` uses a
    polling observer (network file systems, where native events do not arrive).
    """

    def __init__(
        self,
        index: ProjectIndex,
        on_change: Callable[[ChangeSet], None] | None = None,
        polling: bool = False,
        debounce: float = 0.2,
        poll_interval: float = 1.0,
    ) -> None:
        self.index = index
        self.on_change = on_change
        self.debounce = debounce
        self._observer = PollingObserver(timeout=poll_interval) if polling else Observer()
        self._pending: set[Path] = set()
        self._cond = threading.Condition()
        self._first_hint = 0.0
        self._last_hint = 0.0
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="index-watcher", daemon=True)

    def start(self, scan: bool = True, progress: Callable[[int, int], None] | None = None) -> None:
        """Start observing, then (by default) scan: nothing written during the scan is missed."""
        root = self.index.projects_dir
        root.mkdir(parents=True, exist_ok=True)
        self._observer.schedule(_Hints(self._hint), str(root), recursive=True)
        self._observer.start()
        if scan:
            self.index.scan(progress)
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        self._observer.stop()
        self._observer.join(timeout=5)
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def __enter__(self) -> IndexWatcher:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _hint(self, path: Path) -> None:
        with self._cond:
            now = time.monotonic()
            if not self._pending:
                self._first_hint = now
            self._last_hint = now
            self._pending.add(norm(path))
            self._cond.notify_all()

    def flush(self) -> ChangeSet:
        """Apply the pending hints now (also used by tests)."""
        with self._cond:
            paths, self._pending = self._pending, set()
        changes = ChangeSet()
        for path in sorted(paths):
            try:
                if path.exists():
                    if path.is_dir():
                        for sub in _transcripts_under(path):
                            changes.merge(self.index.update_file(sub))
                    else:
                        changes.merge(self.index.update_file(path))
                else:
                    changes.merge(self.index.remove_file(path))
            except OSError as exc:  # a file that vanished between the check and the read
                log.debug("index update of %s failed: %s", path, exc)
                changes.merge(self.index.remove_file(path) if not path.exists() else ChangeSet())
        if changes and self.on_change is not None:
            try:
                self.on_change(changes)
            except Exception:  # the watcher must survive a failing callback
                log.exception("on_change failed")
        return changes

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stop and not self._pending:
                    self._cond.wait()
                if self._stop:
                    return
                # quiet for `debounce`, but never hold hints longer than 5 x debounce
                while not self._stop:
                    now = time.monotonic()
                    due = min(self._last_hint + self.debounce, self._first_hint + 5 * self.debounce)
                    if now >= due:
                        break
                    self._cond.wait(due - now)
                if self._stop:
                    return
            self.flush()


def _transcripts_under(folder: Path) -> list[Path]:
    return sorted(p for pattern in ("*.jsonl", "*.meta.json") for p in folder.rglob(pattern))
