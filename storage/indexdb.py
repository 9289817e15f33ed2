"""The persistent index: an SQLite database (WAL) in the cache folder, so a restart re-reads only what changed.

Per transcript file it keeps the file's identity (device, inode, size, mtime, a fingerprint of its head),
the byte offset it was read up to, its message count and listing summary, and (for the language
server's index) its link rows, line marks and read state; per session the checks' result (diagnostics
and unresolved links, as JSON) with the identities it was computed from, and the usage total
`list` shows with the stamps of the files it was summed from (`storage.usagetotals`); and each file's uuid ->
line table, which settles links across files: one packed row per file (`storage.uuidpack`), found by a scan of
the packs (read once and kept by the connection until the uuids change), the few uuids not in the CLI's canonical
form in a table of their own. Message bodies are never stored.

A file whose identity is unchanged is taken from the database; one that grew on the same inode with the
same head is read from the stored offset; anything else (shrunk, replaced, rewritten in place) is read in
full. A database that is damaged, or written by another schema version, is deleted and rebuilt: it only
ever saves work, and is never trusted over the files. `SESSION_LSP_NO_CACHE=1` turns it off.

The folder is created 0700 and the files 0600 whatever the umask (titles and prompts are private).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

import orjson

from storage import sqliteopen
from storage.cache import cache_dir, private_dir, private_file
from storage.folderstamp import settled
from storage.uuidpack import MAX_LINE, Packs, UuidPack, Wanted, pack

SCHEMA_VERSION = 11
"""9: rows stored as arrays (`storage.rows.Row` is an array-like struct), not maps. 10: a file's line starts stored
as sparse marks (`storage.linemarks`), not one offset a line. 11: a bad line's stored diagnostic names its column
("invalid JSON: Expecting value at column 1"), no longer "line 1 column 1 (char 0)" of any line."""
DB_NAME = "index.sqlite3"
HEAD_BYTES = 4096
BUSY_MS = 5000
AUTOCHECKPOINT = 1000
"""Pages in the write-ahead log past which a commit copies it into the database (SQLite's default)."""
SAME, APPENDED, REWRITTEN = "same", "appended", "rewritten"
FILL_WAIT = 300.0
"""Seconds a listing waits at most for a fill of the database under way in this process."""
DAMAGE = (sqlite3.DatabaseError, orjson.JSONDecodeError, ValueError, TypeError, KeyError, IndexError)
"""What reading a damaged database raises: the caller rebuilds it and computes without it."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files(
    path TEXT PRIMARY KEY, dev INTEGER, ino INTEGER, size INTEGER, mtime_ns INTEGER, ctime_ns INTEGER,
    head_len INTEGER, head BLOB, offset INTEGER, count INTEGER, info BLOB);
CREATE TABLE IF NOT EXISTS sessions(key TEXT PRIMARY KEY, members BLOB, report BLOB);
CREATE TABLE IF NOT EXISTS rowsets(
    path TEXT PRIMARY KEY, dev INTEGER, ino INTEGER, size INTEGER, mtime_ns INTEGER, ctime_ns INTEGER,
    head_len INTEGER, head BLOB, state BLOB, rows BLOB);
CREATE TABLE IF NOT EXISTS usages(path TEXT PRIMARY KEY, stamp BLOB, usage BLOB);
CREATE TABLE IF NOT EXISTS uuid_files(id INTEGER PRIMARY KEY, path TEXT UNIQUE);
CREATE TABLE IF NOT EXISTS uuid_packs(file INTEGER PRIMARY KEY, keys BLOB, lines BLOB);
CREATE TABLE IF NOT EXISTS odd_uuids(
    file INTEGER, line INTEGER, uuid TEXT, PRIMARY KEY(file, line, uuid)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS odd_uuids_by_uuid ON odd_uuids(uuid);
"""


@dataclass(frozen=True, slots=True)
class Identity:
    """What a file was when it was read: a changed field means read again (from `offset` if appended)."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int
    """The inode's change time: a rewrite whose mtime was put back (`touch -r`, `cp -p`) still changes it."""
    head_len: int
    head: bytes

    @classmethod
    def of(cls, path: Path, st: os.stat_result | None = None) -> Identity:
        st = st or os.stat(path)
        head_len = min(st.st_size, HEAD_BYTES)
        mtime = st.st_mtime_ns if settled(st) else -1
        return cls(st.st_dev, st.st_ino, st.st_size, mtime, st.st_ctime_ns, head_len, head_digest(path, head_len))


class _Fills:
    """Fills of the database under way in this process (a language server's first index): a listing that
    would read every file again waits for them and takes their results from the database instead."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.count = 0

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        with self.cond:
            self.count += 1
        try:
            yield
        finally:
            with self.cond:
                self.count -= 1
                self.cond.notify_all()

    def wait(self, timeout: float = FILL_WAIT) -> bool:
        """Block until no fill is under way (True), or `timeout` seconds passed (False)."""
        with self.cond:
            return self.cond.wait_for(lambda: self.count == 0, timeout)


FILLS = _Fills()


def head_digest(path: Path, length: int) -> bytes:
    import hashlib  # only a changed file's head is digested: a listing of unchanged files never needs it

    from storage.fileopen import open_regular

    with open_regular(path) as fh:
        return hashlib.blake2b(fh.read(length), digest_size=16).digest()


def compare(stored: Identity, path: Path, st: os.stat_result) -> str:
    """SAME, APPENDED (same inode and head, longer) or REWRITTEN, for a file as stored and as it is now."""
    if (st.st_dev, st.st_ino) != (stored.dev, stored.ino) or st.st_size < stored.size:
        return REWRITTEN
    if st.st_size == stored.size and (st.st_mtime_ns, st.st_ctime_ns) == (stored.mtime_ns, stored.ctime_ns):
        return SAME
    try:
        if head_digest(path, stored.head_len) != stored.head:
            return REWRITTEN
    except OSError:
        return REWRITTEN
    return APPENDED if st.st_size > stored.size else REWRITTEN


@dataclass(slots=True)
class FileRecord:
    path: str
    identity: Identity
    offset: int
    """Bytes counted and read up to (the end of the last whole line)."""
    count: int
    info: dict[str, Any] | None


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _locked(method: Callable[Concatenate[IndexDB, _P], _R]) -> Callable[Concatenate[IndexDB, _P], _R]:
    @functools.wraps(method)
    def wrapper(self: IndexDB, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self.lock:
            return method(self, *args, **kwargs)

    return wrapper


class IndexDB:
    """One connection to the database, safe to share between threads (each call holds `lock`, and takes
    no other lock); use as a context manager, or `close()`."""

    def __init__(self, conn: sqlite3.Connection, path: Path | None) -> None:
        self.conn = conn
        self.path = path
        self.lock = threading.RLock()
        self.busy = False
        """Another process held the database past the timeout: this batch of writes is dropped."""
        self._packs_read: tuple[int, Packs] | None = None
        """(`data_version` when read, every uuid pack) once a lookup read them (`_packs`)."""

    def _write(self, sql: str, rows: Iterable[Any] | None = None) -> None:
        """One statement of a write batch (for each of `rows`, or once without parameters); a database another
        process holds drops the batch (it only saves work)."""
        if self.busy:
            return
        try:
            if rows is None:
                self.conn.execute(sql)
            else:
                self.conn.executemany(sql, rows)
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc):
                raise
            self.busy = True
            with contextlib.suppress(sqlite3.Error):
                self.conn.rollback()

    @_locked
    def rebuild(self) -> IndexDB | None:
        """Throw this database away (it was found damaged) and open an empty one in its place."""
        self.close()
        if self.path is None:
            return None
        _remove_database(self.path)
        return IndexDB.open(self.path.parent)

    @classmethod
    def open(cls, folder: Path | None = None) -> IndexDB | None:
        """The database in `folder` (default: the cache folder), rebuilt if damaged; None if caching is off
        or the folder cannot be written, and in a forked worker (`storage.sqliteopen`)."""
        folder = folder if folder is not None else cache_dir()
        if folder is None or sqliteopen.forked_worker():
            return None
        db_path = folder / DB_NAME
        for attempt in (1, 2):
            try:
                private_dir(folder)
                private_file(db_path)
                return cls(_connect(db_path, BUSY_MS), db_path)
            except sqlite3.OperationalError as exc:
                if _is_busy(exc):
                    return None  # held by another process past the timeout: work without it this time
                if attempt == 2:
                    return None
                _remove_database(db_path)
            except sqlite3.DatabaseError:
                if attempt == 2:
                    return None
                _remove_database(db_path)
            except OSError:
                return None
        return None

    def __del__(self) -> None:
        # a sqlite3 connection sits in a reference cycle with its statement cache: close it when we go
        self.close()

    def __enter__(self) -> IndexDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @_locked
    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.conn.close()

    # ---- files -------------------------------------------------------------------------------
    @_locked
    def files(self, paths: Iterable[str] | None = None) -> dict[str, FileRecord]:
        rows = self.conn.execute(
            "SELECT path, dev, ino, size, mtime_ns, ctime_ns, head_len, head, offset, count, info FROM files"
        ).fetchall()
        wanted = set(paths) if paths is not None else None
        out = {}
        for path, dev, ino, size, mtime_ns, ctime_ns, head_len, head, offset, count, info in rows:
            if wanted is not None and path not in wanted:
                continue
            out[path] = FileRecord(
                path,
                Identity(dev, ino, size, mtime_ns, ctime_ns, head_len, head),
                offset,
                count,
                orjson.loads(info) if info is not None else None,
            )
        return out

    @_locked
    def put_files(self, records: Iterable[FileRecord]) -> None:
        self._write(
            "INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            [
                (
                    r.path,
                    r.identity.dev,
                    r.identity.ino,
                    r.identity.size,
                    r.identity.mtime_ns,
                    r.identity.ctime_ns,
                    r.identity.head_len,
                    r.identity.head,
                    r.offset,
                    r.count,
                    orjson.dumps(r.info) if r.info is not None else None,
                )
                for r in records
            ],
        )

    @_locked
    def drop_files(self, paths: Iterable[str]) -> None:
        todo = [(p,) for p in paths]
        self._write("DELETE FROM files WHERE path = ?", todo)
        self._write("DELETE FROM usages WHERE path = ?", todo)
        self._drop_uuids(todo)

    # ---- sessions: checks' results -----------------------------------------------------------
    @_locked
    def sessions(self) -> dict[str, tuple[Any, Any]]:
        """key -> (members fingerprint, report), both as decoded JSON."""
        return {
            key: (orjson.loads(members), orjson.loads(report))
            for key, members, report in self.conn.execute("SELECT key, members, report FROM sessions")
        }

    @_locked
    def session(self, key: str) -> tuple[Any, Any] | None:
        """(members fingerprint, report) of one session, or None."""
        found = self.conn.execute("SELECT members, report FROM sessions WHERE key = ?", (key,)).fetchone()
        return None if found is None else (orjson.loads(found[0]), orjson.loads(found[1]))

    @_locked
    def put_sessions(self, items: Iterable[tuple[str, Any, Any]]) -> None:
        self._write(
            "INSERT OR REPLACE INTO sessions VALUES (?,?,?)",
            [(key, orjson.dumps(members), orjson.dumps(report)) for key, members, report in items],
        )

    @_locked
    def drop_sessions(self, keys: Iterable[str]) -> None:
        self._write("DELETE FROM sessions WHERE key = ?", [(k,) for k in keys])

    # ---- usages: a listed session's usage total with the stamps of its files ----------------------
    @_locked
    def usages(self, paths: Iterable[str]) -> dict[str, tuple[Any, Any]]:
        """session path -> (stamp, usage), both as decoded JSON, for those of `paths` stored."""
        wanted = set(paths)
        return {
            path: (orjson.loads(stamp), orjson.loads(usage))
            for path, stamp, usage in self.conn.execute("SELECT path, stamp, usage FROM usages")
            if path in wanted
        }

    @_locked
    def put_usages(self, items: Iterable[tuple[str, Any, Any]]) -> None:
        self._write(
            "INSERT OR REPLACE INTO usages VALUES (?,?,?)",
            [(path, orjson.dumps(stamp), orjson.dumps(usage)) for path, stamp, usage in items],
        )

    # ---- uuids -------------------------------------------------------------------------------
    @_locked
    def put_uuids(self, path: str, uuids: Iterable[tuple[str, int]] | UuidPack) -> None:
        """A file's uuids (and the line each resolves to) in place of those stored for it: one packed row."""
        packed = uuids if isinstance(uuids, UuidPack) else pack(uuids)
        self._write("INSERT OR IGNORE INTO uuid_files(path) VALUES (?)", [(path,)])
        if self.busy:
            self._packs_read = None
            return
        (file,) = self.conn.execute("SELECT id FROM uuid_files WHERE path = ?", (path,)).fetchone()
        self._write("INSERT OR REPLACE INTO uuid_packs VALUES (?,?,?)", [(file, packed.keys, packed.lines)])
        self._write("DELETE FROM odd_uuids WHERE file = ?", [(file,)])
        if packed.odd:
            self._write("INSERT OR IGNORE INTO odd_uuids VALUES (?,?,?)", ((file, line, u) for u, line in packed.odd))
        if self.busy:  # the batch was dropped
            self._packs_read = None
        elif self._packs_read is not None:  # kept packs follow this connection's own writes
            self._packs_read[1].put(file, packed.keys, packed.lines)

    @contextlib.contextmanager
    def uuid_load(self) -> Iterator[None]:
        """A batch of `put_uuids` calls held as one transaction (under `lock` throughout): until `commit()` nothing
        of it is visible to another connection, and a rollback (a crash, a busy database) stores none of it."""
        with self.lock:
            if not self.busy and not self.conn.in_transaction:
                self.conn.execute("BEGIN")
            yield

    @_locked
    def stored_uuid_paths(self, prefix: str) -> list[str]:
        """Files under `prefix` whose uuids are stored."""
        rows = self.conn.execute(
            "SELECT path FROM uuid_files WHERE substr(path, 1, ?) = ?"
            " AND EXISTS (SELECT 1 FROM uuid_packs WHERE file = id)",
            (len(prefix), prefix),
        )
        return [path for (path,) in rows]

    @_locked
    def drop_uuids(self, paths: Iterable[str]) -> None:
        self._drop_uuids([(p,) for p in paths])

    def _drop_uuids(self, paths: list[tuple[str]]) -> None:
        self._packs_read = None
        self._write("DELETE FROM uuid_packs WHERE file = (SELECT id FROM uuid_files WHERE path = ?)", paths)
        self._write("DELETE FROM odd_uuids WHERE file = (SELECT id FROM uuid_files WHERE path = ?)", paths)
        self._write("DELETE FROM uuid_files WHERE path = ?", paths)

    def homes(self, uuid: str) -> list[tuple[str, int]]:
        """(file, 0-based line) of every stored row with this uuid, by file and line."""
        return self.homes_many([uuid]).get(uuid, [])

    @_locked
    def homes_many(self, uuids: Iterable[str]) -> dict[str, list[tuple[str, int]]]:
        """uuid -> (file, 0-based line) of every stored row with it, by file and line, for each of `uuids` found:
        one scan of the packs for all of them, read with the files' paths in one snapshot of the database (another
        process's commit in between would give a file id it dropped, or gave to another file since)."""
        if self.conn.in_transaction:
            return self._homes_many(set(uuids))
        self.conn.execute("BEGIN")
        try:
            return self._homes_many(set(uuids))
        finally:
            with contextlib.suppress(sqlite3.Error):
                self.conn.rollback()  # a read: nothing to keep

    def _homes_many(self, wanted: set[str]) -> dict[str, list[tuple[str, int]]]:
        canonical = Wanted.of(wanted)
        found: dict[str, list[tuple[str, int]]] = {}
        if canonical.keys:
            hits = list(self._packs().find(canonical))
            paths = self._uuid_paths({file for _, file, _ in hits})
            for uuid, file, line in hits:
                found.setdefault(uuid, []).append((paths[file], line))
        odd = list(wanted if self._long_lines() else wanted.difference(canonical.keys.values()))
        sql = "SELECT o.uuid, f.path, o.line FROM odd_uuids o JOIN uuid_files f ON f.id = o.file WHERE o.uuid IN ({})"
        for uuid, path, line in self._select_in(sql, odd):
            found.setdefault(uuid, []).append((path, line))
        for homes in found.values():
            homes.sort()
        return found

    def _long_lines(self) -> bool:
        """Whether some canonical uuid is kept with the odd ones, its line past what a pack holds."""
        return bool(
            self.conn.execute("SELECT EXISTS (SELECT 1 FROM odd_uuids WHERE line > ?)", (MAX_LINE,)).fetchone()[0]
        )

    def _packs(self) -> Packs:
        """Every stored pack, read once and kept (with this connection's own writes of packs) until it drops uuids or
        rolls back, or another connection commits (SQLite's `data_version`): a lookup then scans memory, 20 bytes a
        uuid, instead of reading every file's row again."""
        version = self.conn.execute("PRAGMA data_version").fetchone()[0]
        if self._packs_read is None or self._packs_read[0] != version:
            self._packs_read = None
            rows = self.conn.execute("SELECT file, keys, lines FROM uuid_packs")
            self._packs_read = (version, Packs(rows))
        return self._packs_read[1]

    def _uuid_paths(self, files: Iterable[int]) -> dict[int, str]:
        return dict(self._select_in("SELECT id, path FROM uuid_files WHERE id IN ({})", list(files)))

    def _select_in(self, sql: str, values: list[Any]) -> Iterator[Any]:
        """The rows of `sql`, whose `IN ({})` takes `values`: asked 500 values at a time (SQLite bounds the number
        of parameters of a statement)."""
        for start in range(0, len(values), 500):
            part = values[start : start + 500]
            yield from self.conn.execute(sql.format(",".join("?" * len(part))), part)

    # ---- rowsets: an index's per-file state (link rows, line marks, where reading stopped) -------
    @_locked
    def rowset(self, path: str) -> tuple[Identity, bytes] | None:
        """(identity, read state) of a file's stored state; its rows come separately (`rowset_rows`)."""
        found = self.conn.execute(
            "SELECT dev, ino, size, mtime_ns, ctime_ns, head_len, head, state FROM rowsets WHERE path = ?", (path,)
        ).fetchone()
        return None if found is None else (Identity(*found[:7]), found[7])

    @_locked
    def rowset_identities(self) -> dict[str, Identity]:
        """path -> identity of every stored file state (one query, for deciding which files to read)."""
        rows = self.conn.execute("SELECT path, dev, ino, size, mtime_ns, ctime_ns, head_len, head FROM rowsets")
        return {path: Identity(*rest) for path, *rest in rows}

    @_locked
    def rowset_rows(self, path: str) -> tuple[bytes, bytes] | None:
        """(read state, rows) of a file's stored state."""
        found = self.conn.execute("SELECT state, rows FROM rowsets WHERE path = ?", (path,)).fetchone()
        return None if found is None else (found[0], found[1])

    @_locked
    def put_rowsets(self, items: Iterable[tuple[str, Identity, bytes, bytes]]) -> None:
        self._write(
            "INSERT OR REPLACE INTO rowsets VALUES (?,?,?,?,?,?,?,?,?,?)",
            [
                (p, i.dev, i.ino, i.size, i.mtime_ns, i.ctime_ns, i.head_len, i.head, state, rows)
                for p, i, state, rows in items
            ],
        )

    @_locked
    def drop_rowsets(self, paths: Iterable[str]) -> None:
        self._write("DELETE FROM rowsets WHERE path = ?", [(p,) for p in paths])

    @_locked
    def rollback(self) -> None:
        """Drop the batch written since the last commit."""
        self.busy = False
        self._packs_read = None
        with contextlib.suppress(sqlite3.Error):
            self.conn.rollback()

    @_locked
    def commit(self, *, checkpoint: bool = True) -> bool:
        """Make the batch durable; False when it was dropped (a database another process held too long). Without
        `checkpoint` the batch stays in the write-ahead log, copied into the database by the next commit that
        checkpoints (on any connection; the first index's listing commits right after its index), not this one."""
        if self.busy:
            self.busy = False
            return False
        try:
            if not checkpoint:
                self.conn.execute("PRAGMA wal_autocheckpoint = 0")
            try:
                self.conn.commit()
            finally:
                if not checkpoint:
                    self.conn.execute(f"PRAGMA wal_autocheckpoint = {AUTOCHECKPOINT}")
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc):
                raise
            self._packs_read = None
            with contextlib.suppress(sqlite3.Error):
                self.conn.rollback()
            return False
        return True


def _connect(db_path: Path, busy_ms: int) -> sqlite3.Connection:
    conn = sqliteopen.connect(str(db_path), timeout=busy_ms / 1000)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, SCHEMA_VERSION):
            raise sqlite3.DatabaseError(f"schema {version}, expected {SCHEMA_VERSION}")
        if version == 0:
            conn.executescript(_SCHEMA)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.commit()
    except BaseException:
        conn.close()
        raise
    for suffix in ("-wal", "-shm"):
        with contextlib.suppress(OSError):
            os.chmod(str(db_path) + suffix, 0o600)
    return conn


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _remove_database(db_path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(OSError):
            os.unlink(str(db_path) + suffix)
