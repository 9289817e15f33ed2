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
session. Every file is reached through its folder walked from `/` following no link (`storage.access`) below
the mirror's own root: a key cannot lead out of it, nor a link, FIFO or hard link put in it since. A file is put
in place whole (`storage.wholefile`): a process killed midway leaves at most a `.<name>.tmp` beside it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from storage.access import open_decided_folder, open_in_folder
from storage.cache import private_dir
from storage.errors import InUse, NotATranscript, SessionLspError, Unsafe
from storage.paths import real_root
from storage.pgstore import StreamTail
from storage.store_materialize import StoreSession, session_files
from storage.wholefile import put_whole, write_all

log = logging.getLogger(__name__)
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
            except (Unsafe, NotATranscript, InUse) as exc:  # a link, FIFO or hard link put in the mirror
                self._sessions.pop((project_key, sid), None)
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
        touched = self._set_mtime(main_file, main.mtime * 1_000_000)  # epoch ms, exactly
        if touched:
            change.written.add(main_file)
        return touched is not None

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
    # Every file of the mirror is reached through its folder walked from `/` following no link
    # (`storage.access.open_decided_folder`), then by name in it: a folder on the way or the file swapped for a
    # symlink, a FIFO or a hard link of a file elsewhere is never followed, read or written (`Unsafe` or
    # `NotATranscript`, the session not mirrored).
    def _folder(self, path: Path, *, make: bool = False) -> int:
        """The folder of the mirror file `path` (the mirror's real root and names from `session_files`)."""
        if self.root not in path.parents:
            raise ValueError(f"{path} is outside the mirror {self.root}")
        return open_decided_folder(path.parent, made=[] if make else None)

    def _set_mtime(self, path: Path, mtime_ns: int) -> bool | None:
        """Give `path` this mtime (its link, never what it points to); None when it is missing."""
        try:
            folder = self._folder(path)
        except FileNotFoundError:
            return None
        try:
            if os.stat(path.name, dir_fd=folder, follow_symlinks=False).st_mtime_ns == mtime_ns:
                return False
            os.utime(path.name, ns=(mtime_ns, mtime_ns), dir_fd=folder, follow_symlinks=False)
            return True
        except FileNotFoundError:
            return None
        finally:
            os.close(folder)

    def _append(self, path: Path, data: bytes) -> bool:
        """Append to a file the mirror wrote, if it still has the length the mirror gave it."""
        expected = self._sizes.get(path)
        try:
            fd: int | None = open_in_folder(self._folder(path), path.name, os.O_WRONLY | os.O_APPEND, 0o600, path)
        except FileNotFoundError:
            fd = None
        if fd is None:
            if expected not in (None, 0) or not self._put(path, data):
                return False
            self._sizes[path] = len(data)
            return True
        try:
            size = os.fstat(fd).st_size
            if size != expected:
                return False
            write_all(fd, data)
        finally:
            os.close(fd)
        self._sizes[path] = size + len(data)
        return True

    def _put(self, path: Path, data: bytes) -> bool:
        """Make `path` hold `data` (written aside whole, then renamed over whatever was there); False when it did."""
        folder = self._folder(path, make=True)
        try:
            try:
                fd: int | None = open_in_folder(os.dup(folder), path.name, os.O_RDONLY, 0o600, path)
            except FileNotFoundError:
                fd = None
            if fd is not None:
                with open(fd, "rb") as fh:
                    st = os.fstat(fd)
                    if st.st_nlink > 1:
                        raise Unsafe(f"{path} has {st.st_nlink} names (a hard link); not read nor replaced")
                    if st.st_size == len(data) and fh.read() == data:
                        return False
            put_whole(folder, path.name, data, path, replace=True)
            return True
        finally:
            os.close(folder)

    def _unlink(self, path: Path) -> bool:
        try:
            folder = self._folder(path)
        except FileNotFoundError:
            return False
        try:
            os.unlink(path.name, dir_fd=folder)
        except FileNotFoundError:
            return False
        finally:
            os.close(folder)
        return True
