"""A read-only mirror of a session store in a private folder: the store's sessions as files, laid out
and written byte for byte as the Agent SDK materialises them (`store_materialize.session_files`), so
the file readers and the live index take them as they take a projects folder.

The folder belongs to the process that made it (0700, files 0600) and nothing else writes into it.
A file that grew in the store is appended to (the index then reads only the new bytes); one whose
content changed otherwise is written aside and renamed over the old one; files of sessions the store
no longer holds are removed. Each file's mtime is the store's write time of its session. Every path
is decided by `storage.access` against the mirror's own root: a key cannot lead out of it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from storage.access import is_inside, real_root, resolve_target
from storage.cache import private_dir
from storage.errors import SessionLspError
from storage.locking import make_private_dirs
from storage.store_materialize import StoreSession, session_files

log = logging.getLogger(__name__)
_APPEND = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass
class MirrorChange:
    """Files of the mirror written (created, appended or replaced) and removed by one update."""

    written: set[Path] = field(default_factory=set)
    removed: set[Path] = field(default_factory=set)

    def merge(self, other: MirrorChange) -> None:
        self.written |= other.written
        self.removed |= other.removed

    def __bool__(self) -> bool:
        return bool(self.written or self.removed)


class StoreMirror:
    """The files of one store's sessions under `root` (a projects folder of the mirror's own)."""

    def __init__(self, root: Path) -> None:
        private_dir(root)
        self.root = real_root(root)
        self._files: dict[tuple[str, str], set[Path]] = {}
        """(project key, session id) -> the files written for it."""

    def files_of(self, project_key: str, session_id: str) -> set[Path]:
        return set(self._files.get((project_key, session_id), set()))

    def write(self, session: StoreSession) -> MirrorChange:
        """Bring one session's files up to date; a session with unsafe keys is skipped (logged)."""
        change = MirrorChange()
        try:
            files = {self.root / rel: data for rel, data in session_files(session).items()}
        except ValueError as exc:
            log.warning("store session %r/%r not mirrored: %s", session.project_key, session.session_id, exc)
            return change
        key = (session.project_key, session.session_id)
        for gone in self._files.get(key, set()) - set(files):
            if self._unlink(gone):
                change.removed.add(gone)
        mtime = session.mtime / 1000 if session.mtime else None
        for path, data in files.items():
            if self._put(path, data):
                change.written.add(path)
            if mtime is not None and path.suffix == ".jsonl":
                os.utime(path, (mtime, mtime), follow_symlinks=False)
        self._files[key] = set(files)
        return change

    def remove(self, project_key: str, session_id: str) -> MirrorChange:
        """Drop a session's files (it is gone from the store)."""
        change = MirrorChange()
        for path in self._files.pop((project_key, session_id), set()):
            if self._unlink(path):
                change.removed.add(path)
        return change

    def replace_all(self, sessions: Iterable[StoreSession]) -> MirrorChange:
        """Make the mirror hold exactly `sessions` (a full read of the store)."""
        change = MirrorChange()
        seen: set[tuple[str, str]] = set()
        for session in sessions:
            seen.add((session.project_key, session.session_id))
            change.merge(self.write(session))
        for project_key, session_id in list(self._files):
            if (project_key, session_id) not in seen:
                change.merge(self.remove(project_key, session_id))
        return change

    def _inside(self, path: Path) -> bool:
        return is_inside(self.root, Path(os.path.realpath(path.parent)))

    def _put(self, path: Path, data: bytes) -> bool:
        """Write `data` at `path` (append when it extends what is there); False when unchanged."""
        try:
            old = path.read_bytes() if self._inside(path) and not path.is_symlink() else None
        except FileNotFoundError:
            old = None
        if old == data:
            return False
        if old is not None and data.startswith(old):
            fd = os.open(path, _APPEND)
            try:
                os.write(fd, data[len(old) :])
            finally:
                os.close(fd)
            return True
        if old is None and not os.path.lexists(path):
            target = resolve_target(self.root, path=path, access="create")
            make_private_dirs(target.parent)
            self._create(target, data)
            return True
        if not self._inside(path):
            raise OSError(f"{path} is outside the mirror {self.root}")
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


class MirrorIsReadOnly(SessionLspError):
    """A request would write into a store's mirror: store sessions are read-only in the server."""

    reason = "store-read-only"
