"""The PostgreSQL schema of the session store, and the migrations that bring a database up to it.

Everything lives in one PostgreSQL schema (default `session_store`), so a team grants access to
transcripts with one `GRANT ... ON SCHEMA`:

- `schema_version`: one row per applied migration; the highest `version` is the schema's.
- `streams`: one row per key (`project_key`, `session_id`, `subpath`; `''` for the main
  transcript): its write time `mtime` (epoch ms, strictly increasing per key), the next entry
  sequence number, and for a main transcript the SDK-shaped summary (`summary`).
- `entries`: the transcript lines of a stream in order (`seq`), verbatim as `json` (which keeps
  key order and every escape), with their `uuid`, unique within the stream.

`migrate()` applies what is missing under an advisory lock, so many processes may start at once;
a database migrated by a newer version than this code knows is refused rather than misread.
"""

from __future__ import annotations

from typing import Any

from storage.errors import StoreSchemaError as SchemaError

MIGRATIONS: list[tuple[int, list[str]]] = [
    (
        1,
        [
            """CREATE TABLE {s}.streams (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                project_key text NOT NULL,
                session_id text NOT NULL,
                subpath text NOT NULL DEFAULT '',
                mtime bigint NOT NULL,
                next_seq bigint NOT NULL DEFAULT 0,
                summary json,
                UNIQUE (project_key, session_id, subpath)
            )""",
            """CREATE TABLE {s}.entries (
                stream_id bigint NOT NULL REFERENCES {s}.streams (id) ON DELETE CASCADE,
                seq bigint NOT NULL,
                uuid text,
                entry json NOT NULL,
                PRIMARY KEY (stream_id, seq)
            )""",
            "CREATE UNIQUE INDEX entries_uuid ON {s}.entries (stream_id, uuid) WHERE uuid IS NOT NULL",
            "CREATE INDEX streams_session ON {s}.streams (session_id)",
        ],
    ),
]
LATEST = MIGRATIONS[-1][0]
ADVISORY_KEY = 0x51_5354_4F52  # any fixed number: serialises migrations across processes


async def current_version(conn: Any, schema: str) -> int:
    """The schema's version, 0 when the store was never created in this database."""
    cur = await conn.execute("SELECT to_regclass(%s) IS NOT NULL", (f"{schema}.schema_version",))
    row = await cur.fetchone()
    if not row or not row[0]:
        return 0
    cur = await conn.execute(f"SELECT coalesce(max(version), 0) FROM {schema}.schema_version")
    row = await cur.fetchone()
    return int(row[0]) if row else 0


def _refuse_newer(version: int, schema: str) -> None:
    if version > LATEST:
        raise SchemaError(
            f"schema {schema} is at version {version}, newer than this session-lsp knows ({LATEST}): upgrade it"
        )


async def migrate(conn: Any, schema: str) -> int:
    """Create or migrate the schema on `conn` (autocommit off); returns the version it is at."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (ADVISORY_KEY,))
        version = await current_version(conn, schema)
        _refuse_newer(version, schema)
        if version == LATEST:
            return version
        await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        await conn.execute(
            f"CREATE TABLE IF NOT EXISTS {schema}.schema_version ("
            "version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for number, statements in MIGRATIONS:
            if number <= version:
                continue
            for statement in statements:
                await conn.execute(statement.format(s=schema))
            await conn.execute(f"INSERT INTO {schema}.schema_version (version) VALUES (%s)", (number,))
        return LATEST


async def require_schema(conn: Any, schema: str) -> int:
    """For a read-only store: the schema must exist at a version this code reads."""
    version = await current_version(conn, schema)
    if version == 0:
        raise SchemaError(f"no session store in this database (schema {schema} has no schema_version table)")
    _refuse_newer(version, schema)
    return version
