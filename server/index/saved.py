"""What the index keeps in the persistent database: each file's state and each session's checks.

A file's state is its link rows, line offsets, problems and where reading stopped, as msgpack; it is
restored only when the file's identity says it is the same file, unchanged or appended to (then reading
resumes from the stored offset). A session's checks (diagnostics and unresolved links) are stored with the
identities of the files they were computed from and reused only while those identities hold.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec

from server.index.checks import Pending, SessionReport
from server.index.diagnostics import Diagnostic, Related
from server.index.filestate import FileState
from storage.indexdb import APPENDED, SAME, Identity, IndexDB, compare, settled
from storage.reader import LineProblem, ReadState
from storage.rows import Row
from storage.transcript import Transcript

SessionKey = tuple[Path, str]


class SavedFile(msgspec.Struct, array_like=True, gc=False):
    rows: list[Row]
    problems: list[LineProblem]
    torn: LineProblem | None
    provisional: bool
    offset: int
    line: int
    tail: bytes
    line_offsets: bytes
    size: int


_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(SavedFile).decode


def dump_file(state: FileState) -> bytes:
    t = state.transcript
    return _encode(
        SavedFile(
            t.rows,
            t.problems,
            state.torn,
            state.provisional is not None,
            state.read.offset,
            state.read.line,
            state.read.tail,
            state.line_offsets.tobytes(),
            state.size,
        )
    )


def load_file(path: Path, identity: Identity, blob: bytes) -> FileState:
    saved = _decode(blob)
    state = FileState(path)
    state.inode, state.device, state.size = identity.ino, identity.dev, saved.size
    state.read = ReadState(saved.offset, saved.line, saved.tail)
    offsets = array("Q")
    offsets.frombytes(saved.line_offsets)
    state.line_offsets = offsets
    t = Transcript(path=path, problems=saved.problems, torn_tail=saved.torn)
    t.add_rows(saved.rows)
    state.transcript = t
    state.torn = saved.torn
    state.provisional = saved.rows[-1] if saved.provisional and saved.rows else None
    return state


def restore_file(db: IndexDB, path: Path) -> FileState | None:
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
    return load_file(path, identity, blob)


def save_files(db: IndexDB, states: Iterable[FileState]) -> None:
    """Store the states of files that are settled and fully read as they are on disk now."""
    items = []
    for state in states:
        try:
            st = os.stat(state.path)
        except OSError:
            continue
        if (st.st_ino, st.st_dev, st.st_size) != (state.inode, state.device, state.size) or not settled(st):
            continue
        items.append((str(state.path), Identity.of(state.path, st), dump_file(state)))
    db.put_rowsets(items)


# ---- sessions ------------------------------------------------------------------------------------
def key_text(key: SessionKey) -> str:
    return f"{key[0]}\0{key[1]}"


def legacy_ids(project_dir: Path) -> list[str]:
    """Agent ids of the legacy flat `agent-*.jsonl` files in a project folder (a session's checks use them)."""
    try:
        return sorted(n[6:-6] for n in os.listdir(project_dir) if n.startswith("agent-") and n.endswith(".jsonl"))
    except OSError:
        return []


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
        out.append([str(p), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns])
    return [out, legacy]


def diag_to_json(d: Diagnostic) -> list[Any]:
    return [str(d.path), d.line, d.code, d.message, [[str(r.path), r.line, r.message] for r in d.related], d.key]


def diag_from_json(v: list[Any]) -> Diagnostic:
    path, line, code, message, related, key = v
    return Diagnostic(Path(path), line, code, message, [Related(Path(p), n, m) for p, n, m in related], key=key)


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


__all__ = ["Row", "SavedFile"]
