"""Keep a `ProjectIndex` live with watchdog: events are hints, each update reads to end of file.

The projects folder may not exist yet, or be deleted and made again while we serve: the watch is
then armed on its nearest existing parent, and when the folder is back (checked on every event and
every `recheck` seconds) it is watched again and read in full, and the change says so (`root`).

When the system's inotify limits leave the native observer unable to start, or unable to watch every folder
(`server.index.watchcover`, checked after the first scan and every `COVER_CHECK_S` seconds, and a short count
confirmed `COVER_SETTLE_S` later), the watcher polls instead, reads everything once more, and says why through
`on_fallback`. `stop()` stops whichever observer is current, also one a switch to polling started meanwhile.

Events the kernel dropped (its inotify queue overflowed: a burst of changes, or the process stopped a while) leave
no hint of what changed: the watcher then reads the whole folder again, as when it comes back.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    EventsLostEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
    PatternMatchingEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.polling import PollingObserverVFS

from server.index.store import ChangeSet, ProjectIndex, norm
from server.index.watchcover import WATCH_LIMIT, limit_reason, uncovered

PATTERNS = ["**/*.jsonl", "**/*.meta.json"]
"""watchdog 7 matches the whole path (`PurePath.full_match`), hence the `**/`."""
log = logging.getLogger(__name__)
CHANGES = [
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileClosedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    EventsLostEvent,
]
"""The events asked for: every change and every loss of them, and not a file opened or closed unwritten (each read
of a transcript, ours included, would be two events for the observer's threads to match and drop)."""
COVER_CHECK_S = 60.0
"""How often the native watcher's coverage of the folders is checked again (new folders may find no watch left)."""
COVER_SETTLE_S = 5.0
"""How long after a short count the folders are counted again, and polling chosen only if still short: a burst of
new folders (`cp -r`, `tar x`) has its watches added some time after the folders are made."""


class _Hints(PatternMatchingEventHandler):
    def __init__(self, sink: Callable[[Path], None], root: Path) -> None:
        super().__init__(patterns=PATTERNS, ignore_directories=False, case_sensitive=True)
        self.sink = sink
        self.root = root

    def dispatch(self, event: FileSystemEvent) -> None:
        if isinstance(event, EventsLostEvent):
            self.sink(self.root)  # anything may have changed: the folder itself named reads it all again
            return
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


class _Wake(FileSystemEventHandler):
    """Any event under the parent we wait in: the projects folder may have come back."""

    def __init__(self, wake: Callable[[], None]) -> None:
        super().__init__()
        self.wake = wake

    def on_any_event(self, event: FileSystemEvent) -> None:
        self.wake()


def _identity(folder: Path) -> tuple[int, int] | None:
    """(inode, device) of a folder, None when it is not one."""
    try:
        st = os.stat(folder)
    except OSError:
        return None
    return (st.st_ino, st.st_dev) if os.path.isdir(folder) else None


def changed_stat(path: str) -> os.stat_result:
    """An entry's `lstat` with its change time as its mtime, for the polling observer, whose snapshots compare sizes
    and mtimes only: a rewrite of the same size with the mtime put back (`touch -r`, a sync tool keeping times) moves
    the change time, as any write and any change of mtime does."""
    st = os.lstat(path)
    return os.stat_result(st[:10], {"st_mtime": st.st_ctime, "st_ctime": st.st_ctime, "st_atime": st.st_atime})


def nearest_existing(folder: Path) -> Path:
    for parent in (folder, *folder.parents):
        if parent.is_dir():
            return parent
    return Path(folder.anchor or "/")


class IndexWatcher:
    """Observe the projects folder recursively and apply debounced updates to the index.

    `on_change` is called from the watcher's thread with what changed. `polling=True` uses a
    polling observer (network file systems, where native events do not arrive), which never walks through a link.
    """

    def __init__(
        self,
        index: ProjectIndex,
        on_change: Callable[[ChangeSet], None] | None = None,
        polling: bool = False,
        debounce: float = 0.2,
        poll_interval: float = 1.0,
        recheck: float = 0.5,
        on_fallback: Callable[[str], None] | None = None,
    ) -> None:
        self.index = index
        self.on_change = on_change
        self.on_fallback = on_fallback
        self.debounce = debounce
        self.recheck = recheck
        self.poll_interval = poll_interval
        self.fallback: str | None = None
        """Why the watcher polls although native events were asked for (an inotify limit), if it does."""
        self.polling = polling
        self._swap = threading.RLock()
        """Held to read, arm, start, replace or stop the observer: `stop()` then stops the one that is current."""
        self._stop = False
        self._observer = self._polling_observer() if polling else self._native_observer()
        self._next_cover_check = 0.0
        self._short_count = False
        """Whether the last coverage check counted fewer watches than folders (and the next one decides)."""
        self._watch: Any = None
        self._armed: Path | None = None
        """The folder watched: the projects folder, or its nearest existing parent while it is missing."""
        self._root_id: tuple[int, int] | None = None
        self._woken = False
        self._pending: set[Path] = set()
        self._cond = threading.Condition()
        self._first_hint = 0.0
        self._last_hint = 0.0
        self._thread = threading.Thread(target=self._run, name="index-watcher", daemon=True)

    def _polling_observer(self) -> Any:
        # polling takes a link as what it is (`lstat`): its default `stat` walked through a link to `/` or `/proc`
        return PollingObserverVFS(changed_stat, os.scandir, polling_interval=self.poll_interval)

    def _native_observer(self) -> Any:
        try:
            return Observer()
        except OSError as exc:
            reason = limit_reason(exc)
            if reason is None:
                raise
            self.polling = True
            self._note_fallback(reason)
            return self._polling_observer()

    def _note_fallback(self, reason: str) -> None:
        self.fallback = reason
        log.warning("%s: polling the projects folder every %g s instead", reason, self.poll_interval)
        if self.on_fallback is not None:
            try:
                self.on_fallback(reason)
            except Exception:  # the watcher must survive a failing callback
                log.exception("on_fallback failed")

    def _poll_instead(self, reason: str) -> bool:
        """Replace the native observer by a polling one (the caller reads everything again); whether it did.
        Nothing once `stop()` has begun, or when another thread switched already."""
        with self._swap:
            if self._stop or self.polling:
                return False
            old = self._observer
            self.polling = True
            self._watch = None
            self._observer = self._polling_observer()
            with contextlib.suppress(Exception):  # it may never have started (its start hit the limit)
                old.stop()
                old.join(timeout=5)
            self._note_fallback(reason)  # said first: a process out of descriptors cannot start polling either
            self._arm()
            self._observer.start()
        return True

    def start(self, scan: bool = True, progress: Callable[[int, int], None] | None = None) -> None:
        """Start observing, then (by default) scan: nothing written during the scan is missed."""
        self._arm()  # it may have given way to a polling observer already started (the limit hit as it armed)
        try:
            with self._swap:
                if not self._stop and not self._observer.is_alive():
                    self._observer.start()
        except OSError as exc:  # the native observer adds its watches as it starts
            reason = limit_reason(exc)
            if reason is None or self.polling:
                raise
            self._poll_instead(reason)
        if scan:
            self.index.scan(progress)
        if self._check_cover():
            self.check_root(notify=False, force=True)  # what changed in a folder left unwatched while it scanned
        self._thread.start()

    def _check_cover(self) -> bool:
        """Poll instead when the native observer watches fewer folders than there are, on two counts
        `COVER_SETTLE_S` apart; whether it switched."""
        now = time.monotonic()
        self._next_cover_check = now + COVER_CHECK_S
        short = None
        if not self.polling and self._armed == self.index.projects_dir and self._root_id is not None:
            short = uncovered(self.index.projects_dir)
        if short is None:
            self._short_count = False
            return False
        if not self._short_count:  # folders made in a burst may not have their watches yet: count again later
            self._short_count = True
            self._next_cover_check = now + COVER_SETTLE_S
            return False
        self._short_count = False
        watched, folders = short
        return self._poll_instead(f"{WATCH_LIMIT}: {watched} of {folders} folders watched")

    @property
    def watching(self) -> Path | None:
        """The folder the observer is armed on."""
        return self._armed

    def _arm(self) -> None:
        """Watch the projects folder (recursively) or, while it is missing, its nearest parent."""
        with self._swap:
            if self._stop:
                return
            reason = self._schedule()
        if reason is not None:
            self._poll_instead(reason)

    def _schedule(self) -> str | None:
        """`_arm` under the swap lock; the inotify limit hit when the native observer must give way to polling."""
        root = self.index.projects_dir
        if self._watch is not None:
            with contextlib.suppress(Exception):  # its emitter may have died with the folder
                self._observer.unschedule(self._watch)
            self._watch = None
        self._root_id = _identity(root)
        target = root if self._root_id is not None else nearest_existing(root)
        handler = _Hints(self._hint, root) if target == root else _Wake(self._wake)
        try:
            self._watch = self._observer.schedule(handler, str(target), recursive=target == root, event_filter=CHANGES)
        except OSError as exc:
            reason = limit_reason(exc)
            if reason is not None and not self.polling:
                return reason
            log.debug("cannot watch %s: %s", target, exc)  # gone again since the check: the next recheck retries
            self._watch, self._root_id = None, None
        self._armed = target
        return None

    def _wake(self) -> None:
        with self._cond:
            self._woken = True
            self._cond.notify_all()

    def _root_moved(self) -> bool:
        """Whether the projects folder appeared, went away, was made again, or a nearer parent
        of a missing one appeared."""
        root = self.index.projects_dir
        now = _identity(root)
        if self._armed == root:
            return now != self._root_id or self._watch is None
        return now is not None or nearest_existing(root) != self._armed

    def check_root(self, notify: bool = True, force: bool = False) -> ChangeSet:
        """Re-arm when the projects folder came or went; bring the index in line with the disk.
        `force`: an event named the folder itself (it may be back already, even on the same inode)."""
        if not force and not self._root_moved():
            return ChangeSet()
        was_root = self._armed == self.index.projects_dir and self._root_id is not None
        self._arm()
        changes = ChangeSet()
        for path in list(self.index.files):
            if not path.exists():
                changes.merge(self.index.remove_file(path))
        if self._root_id is not None:
            for path in self.index.discover():
                changes.merge(self._update(path))
            changes.root = "back"
            log.info("projects folder %s is back: watched and read again", self.index.projects_dir)
        elif was_root:
            changes.root = "gone"
            log.warning("projects folder %s is gone: waiting for it in %s", self.index.projects_dir, self._armed)
        if notify:
            self._notify(changes)
        return changes

    def stop(self) -> None:
        """Stop the watcher's thread, then the observer current by then, and wait for both (5 s each at most)."""
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        with self._swap:  # a switch to polling under way ends first; none begins after `_stop`
            observer = self._observer
            observer.stop()
            with contextlib.suppress(RuntimeError):  # never started
                observer.join(timeout=5)

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
        whole = self.index.projects_dir in paths
        changes.merge(self.check_root(notify=False, force=whole))
        paths.discard(self.index.projects_dir)  # read whole just now, or gone and dropped
        for path in sorted(paths):
            if path.is_dir():
                for sub in _transcripts_under(path):
                    changes.merge(self._update(sub))
            elif path.exists():
                changes.merge(self._update(path))
            else:
                changes.merge(self.index.remove_file(path))
        self._notify(changes)
        return changes

    def _update(self, path: Path) -> ChangeSet:
        try:
            return self.index.update_file(path)
        except OSError as exc:  # a file that vanished between the check and the read
            log.debug("index update of %s failed: %s", path, exc)
            return self.index.remove_file(path) if not path.exists() else ChangeSet()

    def _notify(self, changes: ChangeSet) -> None:
        if changes and self.on_change is not None:
            try:
                self.on_change(changes)
            except Exception:  # the watcher must survive a failing callback
                log.exception("on_change failed")

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stop and not self._pending and not self._woken:
                    if not self._cond.wait(self.recheck):
                        break  # every `recheck` seconds: did the projects folder come or go?
                if self._stop:
                    return
                self._woken = False
                idle = not self._pending
            if idle:
                try:
                    if time.monotonic() >= self._next_cover_check and self._check_cover():
                        self.check_root(force=True)  # read everything again: events may have been missed
                    else:
                        self.check_root()
                except Exception:  # the watcher must outlive anything the file system does
                    log.exception("re-arming the watcher failed")
                continue
            with self._cond:
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
            try:
                self.flush()
            except Exception:  # the watcher must outlive anything the file system does
                log.exception("index update failed")


def _transcripts_under(folder: Path) -> list[Path]:
    return sorted(p for pattern in ("*.jsonl", "*.meta.json") for p in folder.rglob(pattern))
