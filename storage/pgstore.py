"""Session transcripts in PostgreSQL through the Claude Agent SDK's `SessionStore` protocol.

Pass a `PostgresSessionStore` as `ClaudeAgentOptions(session_store=...)`: the SDK mirrors every
transcript line the CLI writes to `append()`, and a store-backed resume reads them back with
`load()`. All six methods of the protocol are here (`append`, `load`, `list_sessions`,
`list_session_summaries`, `delete`, `list_subkeys`), plus `list_project_keys`, `find_session`
and `load_project` for our command line and `load_tails` for the language server's mirror.

Guarantees:
- One `append()` is one transaction: a batch is stored whole or not at all.
- Order is kept per key: appends to one key take the key's row lock, so entries are numbered in
  commit order, and within a batch in list order.
- A `uuid` already stored under the key is skipped (also twice within one batch); entries
  without one are appended. A batch whose `uuid`s are all stored already is a retry of a batch
  that committed (the SDK retries a failed `append()`, and a connection can die after the commit
  but before its acknowledgement), so it is skipped whole, its `uuid`-less entries too.
- Entries come back deep-equal and in their key order (stored as `json`, not `jsonb`).
- Main-transcript summaries are folded inside the same transaction (`store_summary`), stamped
  with the same write time that `list_sessions()` reports.
- An unreachable database fails within `connect_timeout` seconds with `StoreUnavailable`.
- Every non-empty `append()` (a skipped retry too: it moves `mtime`) and every `delete()` sends a
  NOTIFY on `CHANNEL` in its transaction (so listeners hear of it once it commits), with the key in the payload
  (`change_payload`): `session-lsp serve` keeps its mirror of the store live with it.

Who can read what: the tables hold whole transcripts (prompts, replies, tool inputs and outputs,
so whatever secrets an agent saw) in plain text. Any role with SELECT on the schema reads every
session of every project in it; `project_key` is not an access boundary. Agents need to write
(and, once, to create the schema); `read_only=True` (used by `session-lsp list/chain --store`)
needs only SELECT. The README's "Sessions in PostgreSQL" gives a role split.

A pool belongs to the event loop that opened it; a store used again under a new loop (another
`asyncio.run`) opens a new pool and drops the old one.

The store needs `psycopg` and `psycopg-pool` (the `pg` extra); it imports them when created.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from storage.errors import StoreError, StoreUnavailable
from storage.schemaname import DEFAULT_SCHEMA, check_schema
from storage.store_materialize import StoreSession, TooDeep, read_entry
from storage.store_schema import migrate, require_schema
from storage.store_summary import fold_summary

__all__ = ["DEFAULT_SCHEMA", "PostgresSessionStore", "StoreError", "StoreUnavailable"]
CHANNEL = "session_lsp_store"
"""The NOTIFY channel of every store in a database; the payload names the schema."""
MAX_PAYLOAD = 7900
"""PostgreSQL refuses a NOTIFY payload of 8000 bytes or more: a longer key is sent as a resync."""


def key_parts(key: Any) -> tuple[str, str, str]:
    """(project_key, session_id, subpath or '') of a SessionKey, checked."""
    try:
        project_key, session_id = key["project_key"], key["session_id"]
    except (KeyError, TypeError) as exc:
        raise ValueError(f"a session key needs project_key and session_id, got {key!r}") from exc
    subpath = key.get("subpath")
    if not isinstance(project_key, str) or not project_key or not isinstance(session_id, str) or not session_id:
        raise ValueError(f"project_key and session_id must be non-empty strings, got {key!r}")
    if subpath is not None and (not isinstance(subpath, str) or not subpath):
        raise ValueError("subpath must be a non-empty string; omit it for the main transcript")
    return project_key, session_id, subpath or ""


def one_line(exc: BaseException) -> str:
    """A driver's message on one line (libpq adds hints on indented lines of their own)."""
    return " ".join(str(exc).split())


def _loaded(text: str) -> Any:
    """A stored entry as `load` gives it; one nested past Python's parser is a `StoreError` naming that, not a
    `RecursionError` out of the store (`store_materialize.read_entry`)."""
    entry = read_entry(text)
    if isinstance(entry, TooDeep):
        raise StoreError(str(entry))
    return entry


def dump_entry(entry: Any) -> str:
    """One entry as compact JSON text; non-UTF-8 strings (lone surrogates) as \\u escapes."""
    try:
        text = json.dumps(entry, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"entry is not JSON: {exc}") from exc
    except RecursionError as exc:  # nested past the encoder's depth (about 1,000 levels)
        raise StoreError("entry is nested too deeply to store") from exc
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(entry, separators=(",", ":"), allow_nan=False)
    return text


def _uuid_of(entry: Any) -> str | None:
    uid = entry.get("uuid") if isinstance(entry, dict) else None
    return uid if isinstance(uid, str) and uid else None


def new_entries(entries: Sequence[Any], stored: set[str]) -> list[int]:
    """Indexes of the entries of a batch to write, given the uuids the key holds already."""
    uids = [_uuid_of(e) for e in entries]
    carried = {u for u in uids if u is not None}
    if carried and carried <= stored:
        return []
    seen = set(stored)
    keep = []
    for i, uid in enumerate(uids):
        if uid is not None:
            if uid in seen:
                continue
            seen.add(uid)
        keep.append(i)
    return keep


def change_payload(schema: str, op: str, project_key: str, session_id: str, subpath: str) -> str:
    """The NOTIFY payload of a change: `{schema, op, project_key, session_id, subpath}` as JSON;
    `{schema, op: "resync"}` when the key is too long for a payload."""
    payload = json.dumps(
        {"schema": schema, "op": op, "project_key": project_key, "session_id": session_id, "subpath": subpath},
        separators=(",", ":"),
    )
    if len(payload.encode("utf-8")) >= MAX_PAYLOAD:
        payload = json.dumps({"schema": schema, "op": "resync"}, separators=(",", ":"))
    return payload


@dataclass
class StreamTail:
    """One stream (a main transcript or a subkey) of a session, with its entries from `start` on."""

    session_id: str
    subpath: str
    stream_id: int
    mtime: int
    start: int
    """The position of `entries[0]` in the stream: 0 for all of it, else what the reader held."""
    entries: list[Any] = field(default_factory=list)


class PostgresSessionStore:
    """A `SessionStore` over one PostgreSQL database (see the module docstring)."""

    def __init__(
        self,
        conninfo: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        min_size: int = 1,
        max_size: int = 10,
        connect_timeout: float = 5.0,
        read_only: bool = False,
    ) -> None:
        """`conninfo`: a libpq URL or key=value string. `read_only` opens every connection with
        `default_transaction_read_only` and never creates or migrates the schema."""
        import psycopg  # noqa: F401 - fail here, with the extra's name, when it is missing
        import psycopg_pool  # noqa: F401

        self.conninfo = conninfo
        self.schema = check_schema(schema, "schema")
        self.min_size, self.max_size = min_size, max_size
        self.connect_timeout = connect_timeout
        self.read_only = read_only
        self._pool: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._opening: asyncio.Lock | None = None

    # -- connections ---------------------------------------------------------------------------

    def _where(self) -> str:
        from psycopg.conninfo import conninfo_to_dict

        try:
            params = conninfo_to_dict(self.conninfo)
        except Exception:
            return "the database"
        host = params.get("host") or "localhost"
        port = params.get("port") or "5432"
        return f"PostgreSQL at {host}:{port}/{params.get('dbname') or params.get('user') or ''}"

    def _kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "connect_timeout": max(1, round(self.connect_timeout)),
            "application_name": "session-lsp-store",
        }
        if self.read_only:
            kwargs["options"] = "-c default_transaction_read_only=on"
        return kwargs

    async def open(self) -> None:
        """Connect (checking the database answers within `connect_timeout`), then create or
        migrate the schema; called by the first store call when not called before."""
        loop = asyncio.get_running_loop()
        if self._pool is not None and self._loop is loop:
            return
        if self._opening is None or self._loop is not loop:
            self._opening = asyncio.Lock()
            self._loop = loop
            self._pool = None
        async with self._opening:
            if self._pool is not None:
                return
            import psycopg
            from psycopg_pool import AsyncConnectionPool

            try:
                conn = await asyncio.wait_for(
                    psycopg.AsyncConnection.connect(self.conninfo, **self._kwargs()), self.connect_timeout + 1
                )
            except (TimeoutError, psycopg.Error, OSError) as exc:
                reason = one_line(exc) or type(exc).__name__
                raise StoreUnavailable(f"cannot connect to {self._where()}: {reason}") from exc
            try:
                if self.read_only:
                    await require_schema(conn, self.schema)
                else:
                    await migrate(conn, self.schema)
            finally:
                await conn.close()
            pool = AsyncConnectionPool(
                self.conninfo,
                kwargs=self._kwargs(),
                min_size=self.min_size,
                max_size=self.max_size,
                timeout=self.connect_timeout,
                check=AsyncConnectionPool.check_connection,
                open=False,
                name="session-lsp-store",
            )
            await pool.open()
            self._pool = pool

    async def close(self) -> None:
        """Close the pool. A pool opened in an event loop that is gone (a previous `asyncio.run`)
        cannot be closed from another one: it is dropped, and its connections with it."""
        pool, self._pool = self._pool, None
        if pool is not None and self._loop is asyncio.get_running_loop():
            await pool.close()

    async def __aenter__(self) -> PostgresSessionStore:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[Any]:
        import psycopg
        from psycopg_pool import PoolTimeout

        await self.open()
        try:
            async with self._pool.connection() as conn:
                yield conn
        except PoolTimeout as exc:
            raise StoreUnavailable(f"no connection to {self._where()} within {self.connect_timeout:g} s") from exc
        except psycopg.OperationalError as exc:
            raise StoreUnavailable(f"{self._where()}: {one_line(exc)}") from exc
        except psycopg.Error as exc:
            raise StoreError(f"{self._where()}: {one_line(exc)}") from exc

    def _t(self, table: str) -> str:
        return f"{self.schema}.{table}"

    # -- the SessionStore protocol -------------------------------------------------------------

    async def append(self, key: Any, entries: list[Any]) -> None:
        """Store a batch under `key` (one transaction; see the module docstring for the rules)."""
        project_key, session_id, subpath = key_parts(key)
        if not entries:
            return
        texts = [dump_entry(e) for e in entries]
        uids = [_uuid_of(e) for e in entries]
        async with self._connection() as conn, conn.transaction():
            cur = await conn.execute(
                f"INSERT INTO {self._t('streams')} AS t (project_key, session_id, subpath, mtime) "
                "VALUES (%s, %s, %s, (extract(epoch FROM clock_timestamp()) * 1000)::bigint) "
                "ON CONFLICT (project_key, session_id, subpath) "
                "DO UPDATE SET mtime = greatest(EXCLUDED.mtime, t.mtime + 1) "
                "RETURNING id, next_seq, summary::text",
                (project_key, session_id, subpath),
            )
            stream_id, next_seq, summary_text = await cur.fetchone()
            carried = sorted({u for u in uids if u is not None})
            stored: set[str] = set()
            if carried:
                cur = await conn.execute(
                    f"SELECT uuid FROM {self._t('entries')} WHERE stream_id = %s AND uuid = ANY(%s)",
                    (stream_id, carried),
                )
                stored = {r[0] for r in await cur.fetchall()}
            keep = new_entries(entries, stored)
            if keep:
                await conn.execute(
                    f"INSERT INTO {self._t('entries')} (stream_id, seq, uuid, entry) "
                    "SELECT %s, %s + n - 1, u, e::json "
                    "FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS x(u, e, n)",
                    (stream_id, next_seq, [uids[i] for i in keep], [texts[i] for i in keep]),
                )
            summary = None
            if subpath == "":
                previous = json.loads(summary_text) if summary_text else None
                summary = dump_entry(fold_summary(previous, [entries[i] for i in keep]))
            await conn.execute(
                f"UPDATE {self._t('streams')} SET next_seq = next_seq + %s, summary = %s::json WHERE id = %s",
                (len(keep), summary, stream_id),
            )
            payload = change_payload(self.schema, "append", project_key, session_id, subpath)
            await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, payload))  # also a retry: mtime moved

    async def load(self, key: Any) -> list[Any] | None:
        """The entries of `key` in order; None when nothing was ever stored under it."""
        project_key, session_id, subpath = key_parts(key)
        async with self._connection() as conn:
            cur = await conn.execute(
                f"SELECT id FROM {self._t('streams')} WHERE project_key = %s AND session_id = %s AND subpath = %s",
                (project_key, session_id, subpath),
            )
            row = await cur.fetchone()
            if row is None:
                return None
            cur = await conn.execute(
                f"SELECT entry::text FROM {self._t('entries')} WHERE stream_id = %s ORDER BY seq", (row[0],)
            )
            return [_loaded(r[0]) for r in await cur.fetchall()]

    async def list_sessions(self, project_key: str) -> list[dict[str, Any]]:
        """`{session_id, mtime}` (epoch ms) of every main transcript of the project."""
        async with self._connection() as conn:
            cur = await conn.execute(
                f"SELECT session_id, mtime FROM {self._t('streams')} WHERE project_key = %s AND subpath = ''",
                (project_key,),
            )
            return [{"session_id": sid, "mtime": int(mtime)} for sid, mtime in await cur.fetchall()]

    async def list_session_summaries(self, project_key: str) -> list[dict[str, Any]]:
        """`{session_id, mtime, data}` of every main transcript of the project, in one query."""
        async with self._connection() as conn:
            cur = await conn.execute(
                f"SELECT session_id, mtime, summary::text FROM {self._t('streams')} "
                "WHERE project_key = %s AND subpath = '' AND summary IS NOT NULL",
                (project_key,),
            )
            return [
                {"session_id": sid, "mtime": int(mtime), "data": json.loads(text)}
                for sid, mtime, text in await cur.fetchall()
            ]

    async def delete(self, key: Any) -> None:
        """Delete a key; a main transcript's key takes its subagent keys with it."""
        project_key, session_id, subpath = key_parts(key)
        sql = f"DELETE FROM {self._t('streams')} WHERE project_key = %s AND session_id = %s"
        params: tuple[str, ...] = (project_key, session_id)
        if subpath:
            sql += " AND subpath = %s"
            params += (subpath,)
        async with self._connection() as conn, conn.transaction():
            await conn.execute(sql, params)
            payload = change_payload(self.schema, "delete", project_key, session_id, subpath)
            await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, payload))

    async def list_subkeys(self, key: Any) -> list[str]:
        """The subpaths stored under a session (its subagent transcripts), sorted."""
        project_key, session_id, _ = key_parts({"project_key": key["project_key"], "session_id": key["session_id"]})
        async with self._connection() as conn:
            cur = await conn.execute(
                f"SELECT subpath FROM {self._t('streams')} "
                "WHERE project_key = %s AND session_id = %s AND subpath <> '' ORDER BY subpath",
                (project_key, session_id),
            )
            return [r[0] for r in await cur.fetchall()]

    # -- beyond the protocol: for reading a whole store ----------------------------------------

    async def list_project_keys(self) -> list[str]:
        """Every project key that has a main transcript, sorted."""
        async with self._connection() as conn:
            cur = await conn.execute(
                f"SELECT DISTINCT project_key FROM {self._t('streams')} WHERE subpath = '' ORDER BY project_key"
            )
            return [r[0] for r in await cur.fetchall()]

    async def find_session(self, session_id: str) -> list[str]:
        """The project keys holding a main transcript with this session id, sorted."""
        async with self._connection() as conn:
            cur = await conn.execute(
                f"SELECT project_key FROM {self._t('streams')} WHERE session_id = %s AND subpath = '' "
                "ORDER BY project_key",
                (session_id,),
            )
            return [r[0] for r in await cur.fetchall()]

    async def load_project(self, project_key: str, session_ids: Sequence[str] | None = None) -> list[StoreSession]:
        """Every session of a project (or only those of `session_ids`) with its subkeys, in one
        query (for listing a whole store, or refreshing the sessions a NOTIFY named)."""
        only = "" if session_ids is None else "AND s.session_id = ANY(%s) "
        params: tuple[Any, ...] = (project_key,) if session_ids is None else (project_key, list(session_ids))
        async with self._connection() as conn:
            cur = await conn.execute(
                f"SELECT s.session_id, s.subpath, s.mtime, e.entry::text FROM {self._t('streams')} s "
                f"JOIN {self._t('entries')} e ON e.stream_id = s.id WHERE s.project_key = %s {only}"
                "ORDER BY s.session_id, s.subpath, e.seq",
                params,
            )
            rows = await cur.fetchall()
        sessions: dict[str, StoreSession] = {}
        for sid, subpath, mtime, text in rows:
            session = sessions.get(sid)
            if session is None:
                session = sessions[sid] = StoreSession(project_key, sid, [])
            if subpath:
                session.subkeys.setdefault(subpath, []).append(read_entry(text))
            else:
                session.entries.append(read_entry(text))
                session.mtime = int(mtime)
        return [s for s in sessions.values() if s.entries]

    async def load_tails(
        self, project_key: str, session_ids: Sequence[str] | None, held: Mapping[int, int]
    ) -> list[StreamTail]:
        """Every stream of the project's sessions (or of `session_ids`), each with its entries from
        `held[stream id]` on (how many a reader holds already; a stream id it does not hold, e.g. a
        key deleted and written again, comes whole), in one query: how a mirror keeps up cheaply."""
        only = "" if session_ids is None else "AND s.session_id = ANY(%s) "
        ids = list(held)
        params: list[Any] = [ids, [held[i] for i in ids], project_key]
        if session_ids is not None:
            params.append(list(session_ids))
        async with self._connection() as conn:
            cur = await conn.execute(
                f"SELECT s.session_id, s.subpath, s.id, s.mtime, coalesce(k.held, 0), e.entry::text "
                f"FROM {self._t('streams')} s "
                "LEFT JOIN unnest(%s::bigint[], %s::bigint[]) AS k(stream_id, held) ON k.stream_id = s.id "
                f"LEFT JOIN {self._t('entries')} e ON e.stream_id = s.id AND e.seq >= coalesce(k.held, 0) "
                f"WHERE s.project_key = %s {only}"
                "ORDER BY s.session_id, s.subpath, e.seq",
                params,
            )
            rows = await cur.fetchall()
        tails: list[StreamTail] = []
        for sid, subpath, stream_id, mtime, start, text in rows:
            if not tails or tails[-1].stream_id != stream_id:
                tails.append(StreamTail(sid, subpath, int(stream_id), int(mtime), int(start)))
            if text is not None:
                tails[-1].entries.append(read_entry(text))
        return tails
