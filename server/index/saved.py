"""What the index keeps in the persistent database: each file's state and each session's checks.

A file's state is its link rows, line marks, problems and where reading stopped, as msgpack; it is
restored only when the file's identity says it is the same file, unchanged or appended to (then reading
resumes from the stored offset). A session's checks (diagnostics and unresolved links) are stored with the
identities of the files they were computed from and reused only while those identities hold.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import msgspec

from server.index.checks import Pending, SessionReport
from server.index.diagnostics import Diagnostic, Related
from server.index.filestate import FileState
from storage.folderstamp import settled
from storage.indexdb import APPENDED, SAME, Identity, IndexDB, compare
from storage.linemarks import LineMarks
from storage.paths import decodable
from storage.reader import LineProblem, ReadState
from storage.rows import Row
from storage.transcript import Transcript

SessionKey = tuple[Path, str]


class SavedHead(msgspec.Struct, array_like=True, gc=False):
    """Where reading stopped: all a restart needs before any row is read."""

    offset: int
    line: int
    tail: bytes
    line_marks: bytes
    """`LineMarks.to_bytes`."""
    size: int
    torn: LineProblem | None
    mtime_ns: int
    print_: int
    """The rewrite check's fingerprint (`FileState.rewritten`), so a restart still sees a rewrite."""
    notes: list[LineProblem]
    """Lines read leniently (`lenient-json` hints)."""
    mtime_settled: bool = False
    """`FileState.mtime_settled`: the file was read long after its last change."""
    ctime_ns: int = -1


class SavedRows(msgspec.Struct, array_like=True, gc=False):
    provisional: bool
    problems: list[LineProblem]
    rows: list[Row]


_encode = msgspec.msgpack.Encoder().encode
_decode_head = msgspec.msgpack.Decoder(SavedHead).decode
_decode_rows = msgspec.msgpack.Decoder(SavedRows).decode


def dump_file(state: FileState) -> tuple[bytes, bytes]:
    """(read state, rows) of a file state, as stored."""
    r, t = state.read, state.transcript
    head = SavedHead(
        r.offset,
        r.line,
        r.tail,
        state.line_marks.to_bytes(),
        state.size,
        state.torn,
        state.mtime_ns,
        state.print_,
        list(state.notes),
        state.mtime_settled,
        state.ctime_ns,
    )
    return _encode(head), _encode(SavedRows(state.provisional is not None, t.problems, t.rows))


class StoredFileState(FileState):
    """A file state whose link rows stay in the database until something reads them.

    `transcript` and `provisional` are loaded on first access through `loader` (the stored state of this
    file); `unload` drops them again once they are stored. Everything else (identity, read state, line
    marks, torn tail) stays in memory, so refreshing an unchanged file touches no rows."""

    _t: Transcript | None
    _prov: Row | None
    _loader: Callable[[], tuple[bytes, bytes] | None] | None

    def __init__(self, path: Path) -> None:
        self._loader = None
        self._t = None
        self._prov = None
        self._loading = False
        self._load_lock = threading.RLock()
        super().__init__(path)

    @property
    def transcript(self) -> Transcript:
        if self._loader is not None or self._loading:
            self._load()
        assert self._t is not None
        return self._t

    @transcript.setter
    def transcript(self, value: Transcript) -> None:
        self._t, self._loader = value, None

    @property
    def provisional(self) -> Row | None:
        if self._loader is not None or self._loading:
            self._load()
        return self._prov

    @provisional.setter
    def provisional(self, value: Row | None) -> None:
        if self._loader is not None and value is None:
            return  # set by the dataclass __init__ before anything is loaded
        self._prov = value

    @property
    def loaded(self) -> bool:
        return self._loader is None

    def load(self) -> None:
        """Read the rows back now (from the database, else from the file)."""
        if self._loader is not None or self._loading:
            self._load()

    def unload(self, loader: Callable[[], tuple[bytes, bytes] | None]) -> None:
        """Drop the rows (they are stored); `loader` gives them back. Call with the index's lock held."""
        with self._load_lock:
            self._t, self._prov, self._children, self._loader = None, None, None, loader

    def _load(self) -> None:
        """One thread loads; any other that asks meanwhile waits for it (the loader takes no index lock)."""
        with self._load_lock:
            loader = self._loader
            if loader is None:
                return  # loaded by another thread, or this one further up the stack
            self._loading = True
            try:
                stored = _stored_rows(loader, self.read)
                if stored is None:
                    self.reset()  # lost, damaged, or another process stored a later state: read the file again
                    self.refresh()
                    return
                head, saved = stored
                t = Transcript(path=self.path, problems=saved.problems, torn_tail=head.torn)
                t.add_rows(saved.rows)
                self._t = t
                self._prov = saved.rows[-1] if saved.provisional and saved.rows else None
                self._loader = None
            finally:
                self._loading = False


def _stored_rows(
    loader: Callable[[], tuple[bytes, bytes] | None], read: ReadState
) -> tuple[SavedHead, SavedRows] | None:
    """The stored read state and rows, when they can be read, decode, and were stored where `read` stopped."""
    try:
        found = loader()
        if found is None:
            return None
        head = _decode_head(found[0])
        if (head.offset, head.line, head.tail) != (read.offset, read.line, read.tail):
            return None
        return head, _decode_rows(found[1])
    except (sqlite3.DatabaseError, msgspec.DecodeError, TypeError):  # a damaged database or value
        return None


def load_file(
    path: Path, identity: Identity, blob: bytes, loader: Callable[[], tuple[bytes, bytes] | None]
) -> StoredFileState:
    """A state restored from the database: identity and read state now, rows when first needed."""
    saved = _decode_head(blob)
    state = StoredFileState(path)
    state.inode, state.device, state.size = identity.ino, identity.dev, saved.size
    state.read = ReadState(saved.offset, saved.line, saved.tail)
    state.line_marks = LineMarks.from_bytes(saved.line_marks)
    if (state.line_marks.lines, state.line_marks.end) != (saved.line, saved.offset - len(saved.tail)):
        raise ValueError("line marks that do not end where the read stopped")  # damaged: the database is rebuilt
    state.torn = saved.torn
    state.mtime_ns, state.print_, state.notes = saved.mtime_ns, saved.print_, list(saved.notes)
    state.mtime_settled, state.ctime_ns = saved.mtime_settled, saved.ctime_ns
    state.unload(loader)
    return state


def restore_file(db: IndexDB, path: Path, loader: Callable[[], tuple[bytes, bytes] | None]) -> StoredFileState | None:
    """The stored state of `path` if the file is the one stored (unchanged, or appended to); else None."""
    found = db.rowset(str(path))
    if found is None:
        return None
    identity, blob = found
    try:
        st = os.stat(path)
    except OSError:
        return None
    if compare(identity, path, st) not in (SAME, APPENDED):
        return None
    return load_file(path, identity, blob, loader)


def stat_identity(st: os.stat_result) -> list[int]:
    """A file's identity now (device, inode, size, mtime, change time): what a session's stamp holds of each file, and
    what `FileState.identity` holds of it as read."""
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def storable(state: FileState) -> tuple[str, Identity, bytes, bytes] | None:
    """A file state as the database stores it (path, identity, read state, rows), if the file is settled and
    read as it is on disk now (its whole identity, times included, the one it had when read: a rewrite of the same
    size with its mtime put back, between the read and now, is another file's); else None."""
    try:
        st = os.stat(state.path)
    except OSError:
        return None
    if stat_identity(st) != state.identity or not settled(st):
        return None
    return (str(state.path), Identity.of(state.path, st), *dump_file(state))


def save_files(db: IndexDB, states: Iterable[FileState]) -> list[FileState]:
    """Store the states (and uuid tables) of files that are settled and read as they are on disk now;
    return those stored."""
    items = []
    stored = []
    for state in states:
        item = storable(state)
        if item is None:
            continue
        items.append(item)
        db.put_uuids(str(state.path), row_uuids(state))
        stored.append(state)
    db.put_rowsets(items)
    return stored


# ---- sessions ------------------------------------------------------------------------------------
def key_text(key: SessionKey) -> str:
    return f"{key[0]}\0{key[1]}"


_legacy_seen: dict[Path, tuple[int, list[str]]] = {}


def legacy_ids(project_dir: Path) -> list[str]:
    """Agent ids of the legacy flat `agent-*.jsonl` files in a project folder (a session's checks use them);
    listed again only when the folder's mtime says its entries changed."""
    try:
        mtime = os.stat(project_dir).st_mtime_ns
        seen = _legacy_seen.get(project_dir)
        if seen is not None and seen[0] == mtime:
            return seen[1]
        names = os.listdir(project_dir)
    except OSError:
        return []
    ids = sorted(n[6:-6] for n in names if n.startswith("agent-") and n.endswith(".jsonl") and decodable(n))
    _legacy_seen[project_dir] = (mtime, ids)
    return ids


def stamps(members: Iterable[Path], legacy: list[str]) -> list[Any] | None:
    """The identities a session's checks depend on; None if a file changed too recently to be sure of."""
    out: list[Any] = []
    for p in sorted(members):
        try:
            st = os.stat(p)
        except OSError:
            return None
        if not settled(st):
            return None
        out.append([str(p), *stat_identity(st)])
    return [out, legacy]


def diag_to_json(d: Diagnostic) -> list[Any]:
    related = [[str(r.path), r.line, r.message] for r in d.related]
    return [str(d.path), d.line, d.code, d.message, related, d.key, *([d.more] if d.more else [])]


def diag_from_json(v: list[Any]) -> Diagnostic:
    path, line, code, message, related, key, *more = v
    return Diagnostic(
        Path(path), line, code, message, [Related(Path(p), n, m) for p, n, m in related], key=key, more=sum(more)
    )


def pending_to_json(p: Pending) -> list[Any]:
    return [str(p.path), p.line, p.kind, p.target, p.extra]


def pending_from_json(v: list[Any]) -> Pending:
    path, line, kind, target, extra = v
    return Pending(Path(path), line, kind, target, extra)


def report_to_json(report: SessionReport) -> list[Any]:
    return [[diag_to_json(d) for d in report.diagnostics], [pending_to_json(p) for p in report.pending]]


def report_from_json(value: list[Any]) -> SessionReport:
    diags, pending = value
    return SessionReport([diag_from_json(d) for d in diags], [pending_from_json(p) for p in pending])


def row_uuids(state: FileState) -> list[tuple[str, int]]:
    """(uuid, line) of the row each uuid resolves to in this file."""
    return [(u, r.line) for u, r in state.transcript.nodes.items()]


__all__ = ["Row", "SavedHead", "SavedRows"]
