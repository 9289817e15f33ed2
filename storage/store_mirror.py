"""A read-only mirror of a session store in a private folder: the store's sessions as files, laid out
and written byte for byte as the Agent SDK materialises them (`store_materialize.session_files`), so
the file readers and the live index take them as they take a projects folder.

The folder belongs to the process that made it (0700, files 0600) and nothing else writes into it.
The mirror remembers, per stream of the store (a main transcript or a subkey), how many entries it
holds and how long each of its files is, so keeping up costs only what is new (`PostgresSessionStore.
load_tails`): new entries are appended to their file; a stream the mirror does not hold (new, or
deleted and written again) is written whole, aside and renamed over any old file; a file whose length
is not what the mirror wrote is reported stale and read again whole; files of sessions and streams
the store no longer holds are removed. The main transcript's mtime is the store's write time of the
session. Every path is decided by `storage.access` against the mirror's own root: a key cannot lead
out of it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from storage.access import resolve_target
from storage.cache import private_dir
from storage.errors import SessionLspError
from storage.locking import make_private_dirs
from storage.paths import is_inside, real_root
from storage.pgstore import StreamTail
from storage.store_materialize import StoreSession, session_files

log = logging.getLogger(__name__)
_APPEND = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
SessionKey = tuple[str, str]


class MirrorIsReadOnly(SessionLspError):
    """A request would write into a store's mirror: store sessions are read-only in the server."""

    reason = "store-read-only"


@dataclass
class MirrorChange:
    """Files of the mirror written (created, appended, replaced or touched) and removed by one update."""

    written: set[Path] = field(default_factory=set)
    removed: set[Path] = field(default_factory=set)

    def merge(self, other: MirrorChange) -> None:
        self.written |= other.written
        self.removed |= other.removed

    def __bool__(self) -> bool:
        return bool(self.written or self.removed)


@dataclass
class _Stream:
    stream_id: int
    count: int
    files: set[Path] = field(default_factory=set)


class StoreMirror:
    """The files of one store's sessions under `root` (a projects folder of the mirror's own)."""

    def __init__(self, root: Path) -> None:
        private_dir(root)
        self.root = real_root(root)
        self._sessions: dict[SessionKey, dict[str, _Stream]] = {}
        """(project key, session id) -> subpath ('' for the main transcript) -> what the mirror holds."""
        self._sizes: dict[Path, int] = {}

    # -- what the mirror holds ---------------------------------------------------------------
    def projects(self) -> set[str]:
        return {project for project, _ in self._sessions}

    def held(self, project_key: str, session_ids: Iterable[str] | None = None) -> dict[int, int]:
        """Stream id -> entries held, for the sessions of a project (or only `session_ids`)."""
        wanted = None if session_ids is None else set(session_ids)
        return {
            stream.stream_id: stream.count
            for (project, sid), streams in self._sessions.items()
            if project == project_key and (wanted is None or sid in wanted)
            for stream in streams.values()
        }

    def forget(self, project_key: str, session_ids: Iterable[str]) -> None:
        """Hold nothing of these sessions any more: the next update writes them whole."""
        for sid in session_ids:
            self._sessions.pop((project_key, sid), None)

    # -- updates -----------------------------------------------------------------------------
    def apply(
        self, project_key: str, session_ids: Iterable[str] | None, tails: list[StreamTail]
    ) -> tuple[MirrorChange, set[str]]:
        """Bring the sessions a `load_tails` answer covers up to date (all of the project's when
        `session_ids` is None; a session it does not list is gone). Returns the change and the ids of
        sessions found stale (to `forget` and load whole)."""
        change, stale = MirrorChange(), set()
        by_session: dict[str, list[StreamTail]] = {}
        for tail in tails:
            by_session.setdefault(tail.session_id, []).append(tail)
        if session_ids is None:
            scope = {sid for project, sid in self._sessions if project == project_key} | set(by_session)
        else:
            scope = set(session_ids)
        for sid in sorted(scope):
            try:
                if not self._apply_session(project_key, sid, by_session.get(sid, []), change):
                    stale.add(sid)
            except ValueError as exc:  # an unsafe key: never a path
                log.warning("store session %r/%r not mirrored: %s", project_key, sid, exc)
        return change, stale

    def remove_project(self, project_key: str) -> MirrorChange:
        change = MirrorChange()
        for project, sid in list(self._sessions):
            if project == project_key:
                self._drop_session(project, sid, change)
        return change

    def _apply_session(self, project_key: str, sid: str, tails: list[StreamTail], change: MirrorChange) -> bool:
        key = (project_key, sid)
        held = self._sessions.get(key, {})
        main = next((t for t in tails if t.subpath == ""), None)
        has_main = main is not None and (main.entries or held.get("") is not None and held[""].count > 0)
        if main is None or not has_main:
            self._drop_session(project_key, sid, change)  # gone, or no main transcript yet: no files
            return True
        streams = self._sessions.setdefault(key, {})
        for subpath in set(streams) - {t.subpath for t in tails}:
            self._drop_files(streams.pop(subpath).files, change)
        for tail in tails:
            if not self._apply_stream(project_key, tail, streams, change):
                return False
        main_file = self.root / project_key / f"{sid}.jsonl"
        mtime_ns = main.mtime * 1_000_000  # epoch ms, exactly
        try:
            if os.lstat(main_file).st_mtime_ns != mtime_ns:
                os.utime(main_file, ns=(mtime_ns, mtime_ns), follow_symlinks=False)
                change.written.add(main_file)
        except FileNotFoundError:
            return False
        return True

    def _apply_stream(
        self, project_key: str, tail: StreamTail, streams: dict[str, _Stream], change: MirrorChange
    ) -> bool:
        held = streams.get(tail.subpath)
        whole = held is None or held.stream_id != tail.stream_id or tail.start == 0
        if not whole and not tail.entries:
            return True
        main = tail.entries if tail.subpath == "" else []
        subkeys = {tail.subpath: tail.entries} if tail.subpath else {}
        files = {
            self.root / rel: data
            for rel, data in session_files(StoreSession(project_key, tail.session_id, main, subkeys)).items()
        }
        if tail.subpath:
            files.pop(self.root / project_key / f"{tail.session_id}.jsonl")
        if whole:
            if held is not None:
                self._drop_files(held.files - set(files), change)
            for path, data in files.items():
                if self._put(path, data):
                    change.written.add(path)
                self._sizes[path] = len(data)
            streams[tail.subpath] = _Stream(tail.stream_id, tail.start + len(tail.entries), set(files))
            return True
        assert held is not None
        if tail.start != held.count:
            return False
        for path, data in files.items():
            if path.name.endswith(".meta.json"):
                if self._put(path, data):
                    change.written.add(path)
                self._sizes[path] = len(data)
            elif data:
                if not self._append(path, data):
                    return False
                change.written.add(path)
            held.files.add(path)
        held.count += len(tail.entries)
        return True

    def _drop_session(self, project_key: str, sid: str, change: MirrorChange) -> None:
        for stream in self._sessions.pop((project_key, sid), {}).values():
            self._drop_files(stream.files, change)

    def _drop_files(self, paths: Iterable[Path], change: MirrorChange) -> None:
        for path in paths:
            self._sizes.pop(path, None)
            if self._unlink(path):
                change.removed.add(path)

    # -- files -------------------------------------------------------------------------------
    def _inside(self, path: Path) -> bool:
        return is_inside(self.root, Path(os.path.realpath(path.parent)))

    def _append(self, path: Path, data: bytes) -> bool:
        """Append to a file the mirror wrote, if it still has the length the mirror gave it."""
        expected = self._sizes.get(path)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            st = None
        if st is None and expected in (None, 0):
            if not self._put(path, data):
                return False
            self._sizes[path] = len(data)
            return True
        if st is None or st.st_size != expected or not self._inside(path):
            return False
        fd = os.open(path, _APPEND)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        self._sizes[path] = st.st_size + len(data)
        return True

    def _put(self, path: Path, data: bytes) -> bool:
        """Make `path` hold `data` (created, or written aside and renamed over); False when it did."""
        if not os.path.lexists(path):
            target = resolve_target(self.root, path=path, access="create")
            make_private_dirs(target.parent)
            self._create(target, data)
            return True
        if not self._inside(path):
            raise ValueError(f"{path} is outside the mirror {self.root}")
        if not path.is_symlink() and path.read_bytes() == data:
            return False
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.unlink(missing_ok=True)
        self._create(tmp, data)
        os.replace(tmp, path)
        return True

    @staticmethod
    def _create(path: Path, data: bytes) -> None:
        with os.fdopen(os.open(path, _CREATE, 0o600), "wb") as fh:
            fh.write(data)

    def _unlink(self, path: Path) -> bool:
        if not self._inside(path):
            return False
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        return True
