"""The PostgreSQL session store against a real server: the SDK's conformance suite, idempotency,
order, summaries in the SDK's shape, and clear errors."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import fold_session_summary
from claude_agent_sdk.testing import run_session_store_conformance

from storage.pgstore import PostgresSessionStore, StoreError, StoreUnavailable
from storage.store_schema import LATEST, SchemaError

CORPUS = Path(__file__).resolve().parent / "corpus" / "claude-code-2.1.328" / "projects"
KEY = {"project_key": "-work-proj", "session_id": "0b8e6bd1-6a2b-4a47-9f5e-1f0ad2a41c11"}


def e(uuid: str | None, n: int, **extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"type": "user", "n": n, **extra}
    if uuid is not None:
        row["uuid"] = uuid
    return row


@pytest.fixture
async def store(pg_server, pg_schema):  # type: ignore[no-untyped-def]
    s = PostgresSessionStore(pg_server.url(), schema=pg_schema)
    yield s
    await s.close()


async def test_sdk_conformance_suite(pg_server, pg_schema) -> None:
    made: list[PostgresSessionStore] = []

    def make() -> PostgresSessionStore:
        s = PostgresSessionStore(pg_server.url(), schema=f"{pg_schema}_{len(made)}", max_size=2)
        made.append(s)
        return s

    try:
        await run_session_store_conformance(make)
    finally:
        for s in made:
            await s.close()
    # a probe plus a fresh store for each of the 14 contracts: none of the optional ones was skipped
    assert len(made) == 15


async def test_repeated_uuid_is_ignored_and_uuidless_entries_are_appended(store) -> None:
    await store.append(KEY, [e("a", 1), e(None, 2), e("b", 3)])
    await store.append(KEY, [e("b", 30), e("c", 4), e(None, 5), e("c", 40)])
    await store.append(KEY, [e(None, 6)])
    await store.append(KEY, [e(None, 6)])
    got = await store.load(KEY)
    assert [r["n"] for r in got] == [1, 2, 3, 4, 5, 6, 6]


async def test_a_replayed_batch_is_skipped_whole(store) -> None:
    batch = [e("a", 1), {"type": "custom-title", "customTitle": "T"}, e("b", 2)]
    await store.append(KEY, batch)
    await store.append(KEY, batch)  # the SDK's retry of a batch whose commit was not acknowledged
    assert await store.load(KEY) == batch


async def test_entries_come_back_with_their_key_order_and_odd_strings(store) -> None:
    entry = {
        "parentUuid": None,
        "type": "user",
        "uuid": "u1",
        "z": 1,
        "a": [1.5, None, True],
        "text": 'nul \x00 lone \ud800 emoji \U0001f600 quote " back \\',
        "nested": {"y": 1, "b": 2},
    }
    await store.append(KEY, [entry])
    (back,) = await store.load(KEY)
    assert back == entry
    assert list(back) == list(entry)
    assert list(back["nested"]) == ["y", "b"]


async def test_bad_entry_is_refused_and_nothing_of_its_batch_is_written(store) -> None:
    await store.append(KEY, [e("a", 1)])
    with pytest.raises(StoreError, match="not JSON"):
        await store.append(KEY, [e("b", 2), {"type": "x", "bad": float("nan")}])
    with pytest.raises(ValueError, match="subpath"):
        await store.append({**KEY, "subpath": ""}, [e("c", 3)])
    assert await store.load(KEY) == [e("a", 1)]


async def test_order_is_kept_per_key_across_many_appends(store) -> None:
    other = {**KEY, "subpath": "subagents/agent-a1"}
    expected_main, expected_sub = [], []
    for i in range(60):
        batch = [e(f"m{i}-{j}", i * 10 + j) for j in range(i % 4)] + [e(None, -i)]
        await store.append(KEY, batch)
        expected_main += batch
        if i % 3 == 0:
            await store.append(other, [e(f"s{i}", i)])
            expected_sub.append(e(f"s{i}", i))
    assert await store.load(KEY) == expected_main
    assert await store.load(other) == expected_sub


def _corpus_sessions() -> list[Path]:
    return sorted(p for p in CORPUS.glob("*/*.jsonl"))


async def test_summaries_equal_the_sdk_fold_of_real_transcripts(store) -> None:
    sessions = _corpus_sessions()
    assert len(sessions) >= 3
    expected = {}
    for path in sessions:
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        key = {"project_key": path.parent.name, "session_id": path.stem}
        folded = None
        for start in range(0, len(rows), 7):  # batches of 7, as a mirror would send them
            batch = rows[start : start + 7]
            await store.append(key, batch)
            folded = fold_session_summary(folded, key, batch)
        expected[(path.parent.name, path.stem)] = folded["data"]
    got = {}
    for project in {p.parent.name for p in sessions}:
        listed = {s["session_id"]: s["mtime"] for s in await store.list_sessions(project)}
        for s in await store.list_session_summaries(project):
            got[(project, s["session_id"])] = s["data"]
            assert s["mtime"] == listed[s["session_id"]]
    assert got == expected
    assert any(d.get("first_prompt_locked") for d in got.values())


async def test_mtime_strictly_increases_per_key(store) -> None:
    seen = []
    for i in range(20):
        await store.append(KEY, [e(f"x{i}", i)])
        (listed,) = await store.list_sessions(KEY["project_key"])
        seen.append(listed["mtime"])
    assert all(b > a for a, b in zip(seen, seen[1:]))


async def test_schema_version_is_recorded_and_a_newer_schema_is_refused(pg_server, pg_schema) -> None:
    import psycopg

    async with PostgresSessionStore(pg_server.url(), schema=pg_schema) as s:
        await s.append(KEY, [e("a", 1)])
    with psycopg.connect(pg_server.url(), autocommit=True) as conn:
        assert conn.execute(f"SELECT max(version) FROM {pg_schema}.schema_version").fetchone() == (LATEST,)
        conn.execute(f"INSERT INTO {pg_schema}.schema_version (version) VALUES ({LATEST + 1})")
    with pytest.raises(SchemaError, match="newer"):
        await PostgresSessionStore(pg_server.url(), schema=pg_schema).open()


async def test_read_only_store_reads_and_cannot_write(pg_server, pg_schema) -> None:
    async with PostgresSessionStore(pg_server.url(), schema=pg_schema) as s:
        await s.append(KEY, [e("a", 1)])
    async with PostgresSessionStore(pg_server.url(), schema=pg_schema, read_only=True) as ro:
        assert await ro.load(KEY) == [e("a", 1)]
        with pytest.raises(Exception, match="read-only"):
            await ro.append(KEY, [e("b", 2)])
    with pytest.raises(SchemaError, match="no session store"):
        await PostgresSessionStore(pg_server.url(), schema=f"{pg_schema}_none", read_only=True).open()


async def test_unreachable_database_is_a_clear_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    store = PostgresSessionStore(f"postgresql://postgres@127.0.0.1:{port}/postgres", connect_timeout=2)
    with pytest.raises(StoreUnavailable, match=f"cannot connect to PostgreSQL at 127.0.0.1:{port}/postgres"):
        await store.append(KEY, [e("a", 1)])


def test_silent_server_gives_a_timeout_error_not_a_hang() -> None:
    """A peer that accepts the connection and never answers: the connect timeout ends the wait."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    outcome: list[BaseException | None] = []

    def attempt() -> None:
        store = PostgresSessionStore(f"postgresql://postgres@127.0.0.1:{port}/postgres", connect_timeout=2)
        try:
            asyncio.run(store.load(KEY))
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - inspected below
            outcome.append(exc)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(60)  # a bound against hanging forever, far above the 2 s timeout
    stop.set()
    acceptor.join()
    for conn in held:
        conn.close()
    listener.close()
    assert outcome, "the store hung on a server that never answers"
    assert isinstance(outcome[0], StoreUnavailable)
    assert "cannot connect" in str(outcome[0]) and "timeout" in str(outcome[0]).lower()
    assert held, "the store never reached the silent server"


async def test_a_select_only_role_reads_and_cannot_write(pg_server, pg_schema) -> None:
    """The README's split: agents write, a reader role with SELECT only can list and read."""
    import psycopg

    async with PostgresSessionStore(pg_server.url(), schema=pg_schema) as s:
        await s.append(KEY, [e("a", 1)])
    role = f"reader_{pg_schema[-8:]}"
    with psycopg.connect(pg_server.url(), autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT USAGE ON SCHEMA {pg_schema} TO {role}")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {pg_schema} TO {role}")
    reader_url = pg_server.url().replace("postgres@", f"{role}@")
    async with PostgresSessionStore(reader_url, schema=pg_schema, read_only=True) as ro:
        assert await ro.list_sessions(KEY["project_key"]) != []
        assert await ro.load(KEY) == [e("a", 1)]
    async with PostgresSessionStore(reader_url, schema=pg_schema) as rw:
        with pytest.raises(StoreError, match="permission denied"):
            await rw.append(KEY, [e("b", 2)])
    async with PostgresSessionStore(pg_server.url(), schema=pg_schema) as s:
        assert await s.load(KEY) == [e("a", 1)]
