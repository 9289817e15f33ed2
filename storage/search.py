"""Full-text search over every prompt, reply and tool result of every session (SQLite FTS5).

The search database sits beside the index database in the cache folder (0700, files 0600). Per file
it remembers the identity (`storage.indexdb.Identity`) and the byte offset indexed up to: an appended
file is read on from there, a rewritten one again in full, a vanished one dropped. Only user and
assistant rows are read; each text block, tool call and tool result becomes one searchable document
pointing at its session, file, line and row uuid. `update` looks at every file of the folder;
`update_paths` only at the files named (a watcher that saw them change: the language server).

Each batch of documents from one file takes a run of consecutive rowids, remembered in `spans`, so a
rewritten or vanished file's documents are deleted by rowid range, not by scanning every document.
Files are read oldest first, so higher rowids hold newer messages: a query that matches more than
`RANK_WINDOW` documents ranks the newest `RANK_WINDOW` of them (ranking every match of a common word
reads all its positions). Snippets (`storage.snippet`) are cut around the first match found by a case-blind regular
expression (FTS5's `snippet()` tokenizes the whole document, up to `MAX_DOC` characters, for each
hit); a hit the expression misses (a match only after folding diacritics) gets FTS5's snippet.
The index keeps 2-, 3- and 4-character prefixes of every token (about 0.3x the folder more), so a
short last word, a prefix of many words (`read*`: read, reading, readme...), reads one list.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import stat
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storage import sqliteopen
from storage.cache import cache_dir, private_dir, private_file
from storage.fileopen import open_regular
from storage.indexdb import APPENDED, SAME, Identity, compare
from storage.jsonline import loads_line, scrub_surrogates
from storage.linechunks import LongLine, WholeLines
from storage.paths import (
    AGENT_FILE_RE,
    UUID_RE,
    is_session_file,
    iter_project_dirs,
    iter_session_files,
    real_root,
    subagent_files,
)
from storage.snippet import cut_snippet, word_pattern

DB_NAME = "search.sqlite3"
SCHEMA_VERSION = 4
MAX_DOC = 20_000
"""Characters of one document kept for search (a huge tool result is cut)."""
RANK_WINDOW = 2000
"""The most matches ranked for one query: the newest ones."""
CHUNK = 8 * 1024 * 1024
"""Bytes read at a time (in whole lines, `storage.linechunks`)."""
Doc = tuple[str, str, str, str, int, str | None]
"""One document as stored: (text, kind, session, path, line, uuid)."""

_SCHEMA = """
CREATE TABLE files (
    path TEXT PRIMARY KEY, dev INTEGER, ino INTEGER, size INTEGER, mtime_ns INTEGER, ctime_ns INTEGER,
    head_len INTEGER, head BLOB,
    offset INTEGER NOT NULL, line INTEGER NOT NULL
);
CREATE TABLE spans (path TEXT NOT NULL, first INTEGER NOT NULL, last INTEGER NOT NULL);
CREATE INDEX spans_path ON spans (path);
CREATE VIRTUAL TABLE docs USING fts5(
    text, kind UNINDEXED, session UNINDEXED, path UNINDEXED, line UNINDEXED, uuid UNINDEXED,
    tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3 4'
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
    """The values in a tool's input, in order, joined by spaces (an empty container or null as an empty string),
    without recursion: an input may be nested thousands of levels deep (the CLI writes it so)."""
    leaves: list[str] = []
    todo = [value]
    while todo:
        item = todo.pop()
        inner = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if inner:
            todo.extend(reversed(list(inner)))
        else:
            leaves.append("" if item is None or inner is not None else str(item))
    return " ".join(leaves)


def plain_query(query: str) -> str:
    """The query as text SQLite takes: a NUL (which ends an FTS5 string early) is a space, and a
    lone surrogate (a JSON escape, an undecodable byte of a command-line argument) is U+FFFD."""
    text: str = scrub_surrogates(query)
    return text.replace("\x00", " ")


def fts_query(query: str) -> str:
    """The person's words as an FTS5 query: every word must appear (prefix match on the last).
    A word said twice is asked for once (FTS5 takes time quadratic in the number of phrases)."""
    words = [w for w in plain_query(query).split() if w]
    if not words:
        return ""
    quoted = ['"' + w.replace('"', '""') + '"' for w in [*dict.fromkeys(words[:-1]), words[-1]]]
    quoted[-1] += "*"
    return " ".join(quoted)


class CatchUpStopped(Exception):
    """A catch-up was asked to stop: what it read is stored, the rest is looked at next time."""


def _stop_now(stop: threading.Event | None) -> None:
    if stop is not None and stop.is_set():
        raise CatchUpStopped("the search database's catch-up was stopped")


def _documents_of(buf: bytes, session_id: str, path: str, line: int, rows: list[Doc]) -> int:
    """Add to `rows` the documents of the user and assistant rows among the whole lines of `buf`, the first one
    being line `line`; returns the number of the line after them."""
    pos = 0
    while (nl := buf.find(b"\n", pos)) >= 0:
        raw = buf[pos:nl]
        if b'"user"' in raw or b'"assistant"' in raw:
            try:
                entry = loads_line(raw)[0]
            except ValueError:
                entry = None
            if isinstance(entry, dict):
                uuid = entry.get("uuid") if isinstance(entry.get("uuid"), str) else None
                for kind, text in documents(entry):
                    if text.strip():
                        rows.append((text[:MAX_DOC], kind, session_id, path, line, uuid))
        pos = nl + 1
        line += 1
    return line


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

    def update(self, projects_dir: Path, stop: threading.Event | None = None) -> int:
        """Index what changed under `projects_dir`; the number of files read. Once `stop` is set, the files read
        so far are stored and `CatchUpStopped` raised (files gone are dropped only by a whole catch-up)."""
        projects_dir = real_root(projects_dir)
        stored = {
            r[0]: r[1:]
            for r in self.conn.execute(
                "SELECT path, dev, ino, size, mtime_ns, ctime_ns, head_len, head, offset, line FROM files"
            )
        }
        found: list[tuple[int, Path, str, os.stat_result]] = []
        for folder in iter_project_dirs(projects_dir):
            for session_file in iter_session_files(folder):
                for path in [session_file, *(s.path for s in subagent_files(session_file))]:
                    try:
                        st = os.stat(path)
                    except OSError:
                        continue
                    found.append((st.st_mtime_ns, path, session_file.stem, st))
        read = 0
        try:
            for _mtime, path, session_id, st in sorted(found, key=lambda f: f[0]):  # oldest first: newer rowids
                _stop_now(stop)
                read += self._update_file(path, session_id, st, stored.get(str(path)))
        except CatchUpStopped:
            self.conn.commit()
            raise
        prefix = str(projects_dir) + os.sep
        seen = {str(f[1]) for f in found}
        for path_text in stored:
            if path_text.startswith(prefix) and path_text not in seen:
                self._forget(path_text)
        self.conn.commit()
        return read

    def update_paths(self, projects_dir: Path, paths: Iterable[Path], stop: threading.Event | None = None) -> int:
        """Index what changed in `paths` only (a file gone is dropped); the number of files read.
        Paths that are not transcripts `update` would index are ignored. `stop` as for `update`."""
        try:
            return self._update_paths(real_root(projects_dir), paths, stop)
        except CatchUpStopped:
            self.conn.commit()
            raise

    def _update_paths(self, projects_dir: Path, paths: Iterable[Path], stop: threading.Event | None) -> int:
        read = 0
        for given in sorted(set(paths)):
            _stop_now(stop)
            path = Path(os.path.realpath(given))
            session_id = session_of(projects_dir, path)
            if session_id is None:
                continue
            row = self.conn.execute(
                "SELECT dev, ino, size, mtime_ns, ctime_ns, head_len, head, offset, line FROM files WHERE path = ?",
                (str(path),),
            ).fetchone()
            try:
                st = os.stat(path)
            except OSError:
                if row is not None:
                    self._forget(str(path))
                continue
            if stat.S_ISREG(st.st_mode):
                read += self._update_file(path, session_id, st, row)
        self.conn.commit()
        return read

    def _drop_docs(self, path: str) -> None:
        for first, last in self.conn.execute("SELECT first, last FROM spans WHERE path = ?", (path,)).fetchall():
            self.conn.execute("DELETE FROM docs WHERE rowid BETWEEN ? AND ?", (first, last))
        self.conn.execute("DELETE FROM spans WHERE path = ?", (path,))

    def _forget(self, path: str) -> None:
        self._drop_docs(path)
        self.conn.execute("DELETE FROM files WHERE path = ?", (path,))

    def _update_file(self, path: Path, session_id: str, st: os.stat_result, row: tuple[Any, ...] | None) -> int:
        offset, line = 0, 0
        if row is not None:
            how = compare(Identity(*row[:7]), path, st)
            if how == SAME and row[7] == st.st_size:
                return 0
            if how in (SAME, APPENDED):
                offset, line = row[7], row[8]
            else:
                self._drop_docs(str(path))
        try:
            offset, line = self._read(path, session_id, offset, line)
        except OSError:
            return 0
        i = Identity.of(path, st)
        self.conn.execute(
            "INSERT OR REPLACE INTO files (path, dev, ino, size, mtime_ns, ctime_ns, head_len, head, offset, line) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (str(path), i.dev, i.ino, i.size, i.mtime_ns, i.ctime_ns, i.head_len, i.head, offset, line),
        )
        return 1

    def _read(self, path: Path, session_id: str, offset: int, line: int) -> tuple[int, int]:
        """Index whole lines from `offset`; returns where the next read starts (an unfinished last
        line waits for its newline). A line over `linechunks.MAX_LINE_BYTES` is passed over unread."""
        rows: list[Doc] = []
        with open_regular(path) as fh:
            fh.seek(offset)
            for piece in WholeLines(fh, CHUNK, keep_rest=False):
                if isinstance(piece, LongLine):
                    offset, line = piece.offset + piece.length + 1, line + 1
                    continue
                line = _documents_of(piece, session_id, str(path), line, rows)
                offset += len(piece)
        if rows:
            self._insert_docs(str(path), rows)
        return offset, line

    def _insert_docs(self, path: str, rows: list[Doc]) -> None:
        """Store one file's new documents under consecutive rowids, remembered in `spans`."""
        newest = self.conn.execute("SELECT rowid FROM docs ORDER BY rowid DESC LIMIT 1").fetchone()
        first = (newest[0] if newest else 0) + 1
        self.conn.executemany(
            "INSERT INTO docs (rowid, text, kind, session, path, line, uuid) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(first + n, *r) for n, r in enumerate(rows)],
        )
        self.conn.execute(
            "INSERT INTO spans (path, first, last) VALUES (?, ?, ?)", (path, first, first + len(rows) - 1)
        )

    def search(self, query: str, limit: int = 50, projects_dir: Path | None = None) -> list[Hit]:
        """The best `limit` matches of every word of `query` (the last one as a prefix)."""
        match = fts_query(query)
        if not match:
            return []
        where = "docs MATCH :match"
        args: dict[str, Any] = {"match": match, "window": RANK_WINDOW}
        prefix = str(real_root(projects_dir)) + os.sep if projects_dir is not None else ""
        if prefix and self._holds_other_than(prefix):
            where += " AND path LIKE :prefix ESCAPE '\\'"
            args["prefix"] = _like_prefix(prefix)
        # one pass over the matches, newest first: their rank, then the best `limit` of them
        window = self.conn.execute(
            f"SELECT rowid, rank FROM docs WHERE {where} ORDER BY rowid DESC LIMIT :window", args
        ).fetchall()
        best = [r[0] for r in sorted(window, key=lambda r: (r[1], -r[0]))[:limit]]
        if not best:
            return []
        found = {
            r[0]: r[1:]
            for r in self.conn.execute(
                "SELECT rowid, session, path, line, uuid, kind, text FROM docs "
                f"WHERE rowid IN ({','.join('?' * len(best))})",
                best,
            )
        }
        pattern = word_pattern(plain_query(query))
        hits = []
        for rowid in best:
            session, path, line, uuid, kind, text = found[rowid]
            hits.append(Hit(session, path, int(line), uuid, kind, self._snippet(text, pattern, match, rowid)))
        return hits

    def _snippet(self, text: str, pattern: re.Pattern[str] | None, match: str, rowid: int) -> str:
        cut = cut_snippet(text, pattern) if pattern is not None else None
        if cut is None:  # a match only after folding diacritics: FTS5 finds it
            row = self.conn.execute(
                "SELECT snippet(docs, 0, '[', ']', '…', 16) FROM docs WHERE docs MATCH ? AND rowid = ?", (match, rowid)
            ).fetchone()
            cut = row[0] if row else ""
        return cut

    def _holds_other_than(self, prefix: str) -> bool:
        """Whether the index holds files outside `prefix` (then each hit's path is checked)."""
        outside = self.conn.execute(
            "SELECT 1 FROM files WHERE substr(path, 1, ?) != ? LIMIT 1", (len(prefix), prefix)
        ).fetchone()
        return outside is not None


def session_of(projects_dir: Path, path: Path) -> str | None:
    """The session of a transcript as `SearchIndex.update` finds it: `<project>/<sessionId>.jsonl`, or
    `<project>/<sessionId>/subagents/[...]/agent-<id>.jsonl`; None for any other path."""
    try:
        parts = path.relative_to(projects_dir).parts
    except ValueError:
        return None
    if len(parts) == 2 and is_session_file(path):
        return path.stem
    if len(parts) >= 4 and parts[2] == "subagents" and UUID_RE.match(parts[1]) and AGENT_FILE_RE.match(parts[-1]):
        return parts[1]
    return None


def _like_prefix(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _connect(where: str) -> sqlite3.Connection:
    conn = sqliteopen.connect(where, timeout=5)
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
