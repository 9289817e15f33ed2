"""A store entry nested deeper than Python's JSON parser goes (1,500 levels: the real CLI writes and reads such a
row, PostgreSQL's `json` column takes it). Before, reading it raised `RecursionError`: `list --store` ended in a
traceback (status 1), `check --store` failed, and in the server the store's feed thread died for good, so the
store's other sessions were never listed, its `error` stayed null and nothing was read again. Now that session is
left out (named on stderr, or in the server's log) as a session no file can hold is, and the others are served.
A real PostgreSQL server, the real command line and server over stdio."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from rawlsp import LIVENESS, RawServer
from test_store_commands import cli

from storage.pgstore import PostgresSessionStore

DEEP = "0d0d0d0d-0000-4000-8000-000000000001"
PLAIN = "0d0d0d0d-0000-4000-8000-000000000002"
LEVELS = 1500


def _row(session_id: str, uuid: str) -> dict[str, Any]:
    return {
        "type": "user",
        "parentUuid": None,
        "uuid": uuid,
        "sessionId": session_id,
        "timestamp": "2026-11-30T10:00:00.000Z",
        "cwd": "/w",
        "message": {"role": "user", "content": "hello"},
    }


async def _fill(url: str, schema: str) -> None:
    import psycopg

    store = PostgresSessionStore(url, schema=schema)
    try:
        for sid, uuid in (
            (DEEP, "0d0d0d0d-0000-4000-8000-0000000000f1"),
            (PLAIN, "0d0d0d0d-0000-4000-8000-0000000000f2"),
        ):
            await store.append({"project_key": "-w", "session_id": sid}, [_row(sid, uuid)])
    finally:
        await store.close()
    deep = (
        json.dumps(_row(DEEP, "0d0d0d0d-0000-4000-8000-0000000000f3"))[:-1]
        + ',"x":'
        + "[" * LEVELS
        + "]" * LEVELS
        + "}"
    )
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:  # no Python encoder goes so deep
        await conn.execute(
            f"INSERT INTO {schema}.entries (stream_id, seq, uuid, entry) SELECT id, next_seq, %s, %s::json "
            f"FROM {schema}.streams WHERE session_id = %s",
            ("0d0d0d0d-0000-4000-8000-0000000000f3", deep, DEEP),
        )
        await conn.execute(f"UPDATE {schema}.streams SET next_seq = next_seq + 1 WHERE session_id = %s", (DEEP,))


def test_a_store_entry_nested_past_the_parser_leaves_out_only_its_session(  # type: ignore[no-untyped-def]
    pg_server, pg_schema, tmp_path: Path
) -> None:
    url = pg_server.url()
    asyncio.run(_fill(url, pg_schema))
    for args in (["list", "--json"], ["check", "--json"]):
        done = cli(*args, "--store", url, "--store-schema", pg_schema)
        assert done.returncode == 0, done.stderr  # before: 1 (a traceback) and 2 ("check failed: RecursionError")
        assert DEEP not in done.stdout and (PLAIN in done.stdout or args[0] == "check")  # a clean check lists none
        assert f"'-w'/'{DEEP}' skipped: an entry of" in done.stderr and "nested too deeply" in done.stderr
    projects = tmp_path / "projects"
    projects.mkdir()
    with RawServer() as server:
        server.initialize(projects, stores=[{"url": url, "schema": pg_schema}])
        deadline = time.monotonic() + LIVENESS
        while True:
            listed = server.call("sessions/list", {})["result"]
            if listed["sessions"] or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert [s["sessionId"] for s in listed["sessions"]] == [PLAIN], listed  # before: none, for good
        assert listed["stores"][0]["error"] is None


def test_the_sdk_contract_refuses_too_deep_entries_by_name(pg_server, pg_schema) -> None:  # type: ignore[no-untyped-def]
    """`load` of the session holding such an entry, and `append` of one deeper than the encoder goes, raise a
    `StoreError` that says so (before: a `RecursionError` out of the store); the other session still loads."""
    from storage.errors import StoreError

    url = pg_server.url()
    asyncio.run(_fill(url, pg_schema))

    async def run() -> None:
        store = PostgresSessionStore(url, schema=pg_schema)
        try:
            try:
                await store.load({"project_key": "-w", "session_id": DEEP})
            except StoreError as exc:
                assert "nested too deeply" in str(exc)
            else:
                raise AssertionError("a too-deep entry was loaded")
            assert len(await store.load({"project_key": "-w", "session_id": PLAIN}) or []) == 1
            deep: Any = []
            for _ in range(LEVELS):
                deep = [deep]
            try:
                await store.append({"project_key": "-w", "session_id": PLAIN}, [{**_row(PLAIN, "x"), "x": deep}])
            except StoreError as exc:
                assert "nested too deeply" in str(exc)
            else:
                raise AssertionError("a too-deep entry was stored")
            assert len(await store.load({"project_key": "-w", "session_id": PLAIN}) or []) == 1
        finally:
            await store.close()

    asyncio.run(run())
