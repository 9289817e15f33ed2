"""Full-text search over every prompt, reply and tool result of every session (SQLite FTS5).

The search database sits beside the index database in the cache folder (0700, files 0600). Per file
it remembers the identity (`storage.indexdb.Identity`) and the byte offset indexed up to: an appended
file is read on from there, a rewritten one again in full, a vanished one dropped. Only user and
assistant rows are read; each text block, tool call and tool result becomes one searchable document
pointing at its session, file, line and row uuid.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storage.access import real_root
from storage.cache import cache_dir, private_dir, private_file
from storage.indexdb import APPENDED, SAME, Identity, compare
from storage.jsonline import loads_line
from storage.paths import iter_project_dirs, iter_session_files, subagent_files
from storage.reader import open_regular

DB_NAME = "search.sqlite3"
SCHEMA_VERSION = 1
MAX_DOC = 20_000
"""Characters of one document kept for search (a huge tool result is cut)."""

_SCHEMA = """
CREATE TABLE files (
    path TEXT PRIMARY KEY, dev INTEGER, ino INTEGER, size INTEGER, mtime_ns INTEGER, head_len INTEGER, head BLOB,
    offset INTEGER NOT NULL, line INTEGER NOT NULL
);
CREATE VIRTUAL TABLE docs USING fts5(
    text, kind UNINDEXED, session UNINDEXED, path UNINDEXED, line UNINDEXED, uuid UNINDEXED,
    tokenize = 'unicode61 remove_diacritics 2'
);
"""


@dataclass(frozen=True)
class Hit:
    session_id: str
    path: str
    line: int
    """0-based line of the row in its file."""
    uuid: str | None
    kind: str
    """prompt, reply, thinking, tool or result."""
    snippet: str

    def to_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "path": self.path,
            "line": self.line,
            "uuid": self.uuid,
            "kind": self.kind,
            "snippet": self.snippet,
        }


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def documents(entry: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(kind, text) of the searchable parts of one row."""
    kind = entry.get("type")
    message = entry.get("message")
    if kind not in ("user", "assistant") or not isinstance(message, dict):
        return
    content = message.get("content")
    if isinstance(content, str):
        if kind == "user" and not entry.get("isMeta"):
            yield "prompt", content
        return
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype == "text" and block.get("text"):
            yield ("reply" if kind == "assistant" else "prompt"), str(block["text"])
        elif btype == "thinking" and block.get("thinking"):
            yield "thinking", str(block["thinking"])
        elif btype == "tool_use":
            yield "tool", f"{block.get('name', '')} {_flatten(block.get('input'))}"
        elif btype == "tool_result":
            yield "result", _text_of(block.get("content"))


def _flatten(value: Any) -> str:
    if isinstance(value, dict):
        return " ".join(_flatten(v) for v in value.values())
    if isinstance(value, list):
        return " ".join(_flatten(v) for v in value)
    return "" if value is None else str(value)


def fts_query(query: str) -> str:
    """The person's words as an FTS5 query: every word must appear (prefix match on the last)."""
    words = [w for w in query.split() if w]
    quoted = ['"' + w.replace('"', '""') + '"' for w in words]
    if quoted:
        quoted[-1] += "*"
    return " ".join(quoted)


class SearchIndex:
    """The search database; `update(projects_dir)` catches up with the folder, `search()` queries it."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    @classmethod
    def open(cls, folder: Path | None = None) -> SearchIndex:
        """The database in `folder` (default: the cache folder; in memory when caching is off)."""
        folder = folder if folder is not None else cache_dir()
        if folder is None:
            return cls(_connect(":memory:"))
        private_dir(folder)
        path = folder / DB_NAME
        private_file(path)
        try:
            return cls(_connect(str(path)))
        except sqlite3.DatabaseError:  # damaged or another schema: never trusted, rebuilt
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(OSError):
                    os.unlink(str(path) + suffix)
            private_file(path)
            return cls(_connect(str(path)))

    def close(self) -> None:
        self.conn.close()

    def update(self, projects_dir: Path) -> int:
        """Index what changed under `projects_dir`; the number of files read."""
        projects_dir = real_root(projects_dir)
        seen: set[str] = set()
        read = 0
        for folder in iter_project_dirs(projects_dir):
            for session_file in iter_session_files(folder):
                for path in [session_file, *(s.path for s in subagent_files(session_file))]:
                    seen.add(str(path))
                    read += self._update_file(path, session_file.stem)
        prefix = str(projects_dir) + os.sep
        for (stored,) in self.conn.execute("SELECT path FROM files").fetchall():
            if stored.startswith(prefix) and stored not in seen:
                self._forget(stored)
        self.conn.commit()
        return read

    def _forget(self, path: str) -> None:
        self.conn.execute("DELETE FROM docs WHERE path = ?", (path,))
        self.conn.execute("DELETE FROM files WHERE path = ?", (path,))

    def _update_file(self, path: Path, session_id: str) -> int:
        try:
            st = os.stat(path)
        except OSError:
            return 0
        row = self.conn.execute(
            "SELECT dev, ino, size, mtime_ns, head_len, head, offset, line FROM files WHERE path = ?", (str(path),)
        ).fetchone()
        offset, line = 0, 0
        if row is not None:
            how = compare(Identity(*row[:6]), path, st)
            if how == SAME and row[6] == st.st_size:
                return 0
            if how in (SAME, APPENDED):
                offset, line = row[6], row[7]
            else:
                self.conn.execute("DELETE FROM docs WHERE path = ?", (str(path),))
        try:
            offset, line = self._read(path, session_id, offset, line)
        except OSError:
            return 0
        i = Identity.of(path, st)
        self.conn.execute(
            "INSERT OR REPLACE INTO files (path, dev, ino, size, mtime_ns, head_len, head, offset, line) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (str(path), i.dev, i.ino, i.size, i.mtime_ns, i.head_len, i.head, offset, line),
        )
        return 1

    def _read(self, path: Path, session_id: str, offset: int, line: int) -> tuple[int, int]:
        """Index whole lines from `offset`; returns where the next read starts (an unfinished last
        line waits for its newline)."""
        with open_regular(path) as fh:
            fh.seek(offset)
            data = fh.read()
        pos = 0
        rows = []
        while (nl := data.find(b"\n", pos)) >= 0:
            raw = data[pos:nl]
            if b'"user"' in raw or b'"assistant"' in raw:
                try:
                    entry = loads_line(raw)[0]
                except ValueError:
                    entry = None
                if isinstance(entry, dict):
                    uuid = entry.get("uuid") if isinstance(entry.get("uuid"), str) else None
                    for kind, text in documents(entry):
                        if text.strip():
                            rows.append((text[:MAX_DOC], kind, session_id, str(path), line, uuid))
            pos = nl + 1
            line += 1
        self.conn.executemany(
            "INSERT INTO docs (text, kind, session, path, line, uuid) VALUES (?, ?, ?, ?, ?, ?)", rows
        )
        return offset + pos, line

    def search(self, query: str, limit: int = 50, projects_dir: Path | None = None) -> list[Hit]:
        """The best `limit` matches of every word of `query` (the last one as a prefix)."""
        match = fts_query(query)
        if not match:
            return []
        prefix = str(real_root(projects_dir)) + os.sep if projects_dir is not None else ""
        rows = self.conn.execute(
            "SELECT session, path, line, uuid, kind, snippet(docs, 0, '[', ']', '…', 16) FROM docs "
            "WHERE docs MATCH ? AND path LIKE ? ESCAPE '\\' ORDER BY rank LIMIT ?",
            (match, _like_prefix(prefix), limit),
        ).fetchall()
        return [Hit(r[0], r[1], int(r[2]), r[3], r[4], r[5]) for r in rows]


def _like_prefix(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _connect(where: str) -> sqlite3.Connection:
    conn = sqlite3.connect(where, check_same_thread=False, timeout=5)
    if where != ":memory:":
        conn.execute("PRAGMA journal_mode=WAL")
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version not in (0, SCHEMA_VERSION):
        conn.close()
        raise sqlite3.DatabaseError(f"search schema {version}, expected {SCHEMA_VERSION}")
    if version == 0:
        conn.executescript(_SCHEMA)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.commit()
    if where != ":memory:":
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(OSError):
                os.chmod(where + suffix, 0o600)
    return conn
