"""The store's NOTIFY on every change and the mirror that follows it, against a real PostgreSQL server:
the payload names the key; `load_tails` gives only what a reader does not hold; the mirror, kept up
append by append, holds exactly the bytes the SDK's materialisation writes, and a mirror file changed
behind its back is found stale and written again whole."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import psycopg
import pytest

from storage.pgstore import CHANNEL, PostgresSessionStore
from storage.store_materialize import load_session, write_session
from storage.store_mirror import StoreMirror

PROJECT = "-work-proj"
SID = "0b8e6bd1-6a2b-4a47-9f5e-1f0ad2a41c11"
MAIN = {"project_key": PROJECT, "session_id": SID}
AGENT = {**MAIN, "subpath": "subagents/agent-a1"}


def row(uuid: str, n: int) -> dict[str, Any]:
    return {"type": "user", "uuid": uuid, "sessionId": SID, "n": n, "text": "é\u2028"}


@pytest.fixture
async def store(pg_server, pg_schema):  # type: ignore[no-untyped-def]
    s = PostgresSessionStore(pg_server.url(), schema=pg_schema)
    await s.open()
    yield s
    await s.close()


async def notes(conn: psycopg.AsyncConnection, count: int) -> list[dict[str, Any]]:
    out = []
    async for note in conn.notifies(timeout=10, stop_after=count):
        out.append(json.loads(note.payload))
    return out


async def test_every_change_is_notified_with_its_key(store: PostgresSessionStore, pg_server, pg_schema) -> None:
    async with await psycopg.AsyncConnection.connect(pg_server.url(), autocommit=True) as conn:
        await conn.execute(f"LISTEN {CHANNEL}")
        await store.append(MAIN, [row("u1", 1)])
        await store.append(MAIN, [row("u1", 1)])  # a retry: stored nothing, but moved mtime
        await store.append(AGENT, [row("a1", 1)])
        await store.delete(MAIN)
        await store.append({"project_key": PROJECT, "session_id": "x" * 8000}, [row("u2", 2)])
        got = await notes(conn, 5)
    key = {"schema": pg_schema, "project_key": PROJECT, "session_id": SID}
    assert got == [
        {**key, "op": "append", "subpath": ""},
        {**key, "op": "append", "subpath": ""},
        {**key, "op": "append", "subpath": "subagents/agent-a1"},
        {**key, "op": "delete", "subpath": ""},
        {"schema": pg_schema, "op": "resync"},  # a key too long for a payload
    ]


async def test_load_tails_gives_only_what_is_not_held(store: PostgresSessionStore) -> None:
    await store.append(MAIN, [row("u1", 1), row("u2", 2)])
    await store.append(AGENT, [row("a1", 1)])
    (main, agent) = await store.load_tails(PROJECT, [SID], {})
    assert (main.subpath, main.start, [e["uuid"] for e in main.entries]) == ("", 0, ["u1", "u2"])
    assert (agent.subpath, agent.start, len(agent.entries)) == ("subagents/agent-a1", 0, 1)
    await store.append(MAIN, [row("u3", 3)])
    held = {main.stream_id: 2, agent.stream_id: 1}
    (main2, agent2) = await store.load_tails(PROJECT, None, held)
    assert (main2.start, [e["uuid"] for e in main2.entries], agent2.entries) == (2, ["u3"], [])
    assert main2.mtime > main.mtime
    await store.delete(MAIN)
    await store.append(MAIN, [row("u9", 9)])  # written again: a new stream, given whole
    (again,) = await store.load_tails(PROJECT, [SID], held)
    assert (again.start, [e["uuid"] for e in again.entries]) == (0, ["u9"])


def files_under(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


async def test_the_mirror_holds_what_the_sdk_materialises(store: PostgresSessionStore, tmp_path: Path) -> None:
    mirror = StoreMirror(tmp_path / "mirror")
    meta = {"type": "agent_metadata", "agentType": "Explore"}
    batches: list[tuple[dict[str, Any], list[Any]]] = [
        (AGENT, [row("a1", 1)]),  # a subagent before its session's main transcript: no files yet
        (MAIN, [row("u1", 1), {"type": "mode", "n": 0}]),
        (AGENT, [meta, row("a2", 2)]),
        (MAIN, [row("u2", 2)]),
        (AGENT, [{**meta, "agentType": "Plan"}]),
    ]
    sizes = []
    for key, entries in batches:
        await store.append(key, entries)
        tails = await store.load_tails(PROJECT, [SID], mirror.held(PROJECT, [SID]))
        change, stale = mirror.apply(PROJECT, [SID], tails)
        assert stale == set()
        sizes.append(sum(len(b) for b in files_under(mirror.root).values()))
        if key is AGENT and len(sizes) == 1:
            assert files_under(mirror.root) == {}
            continue
        fresh = tmp_path / f"fresh{len(sizes)}"
        path = write_session(fresh, await load_session(store, PROJECT, SID), scratch=True)
        assert files_under(mirror.root) == files_under(fresh)
        with_mtime = await store.list_sessions(PROJECT)
        assert os.stat(mirror.root / PROJECT / f"{SID}.jsonl").st_mtime_ns == with_mtime[0]["mtime"] * 1_000_000
        assert path.name == f"{SID}.jsonl"
    assert sizes[0] == 0 and sizes[1] > 0
    meta_file = mirror.root / PROJECT / SID / "subagents" / "agent-a1.meta.json"
    assert json.loads(meta_file.read_text()) == {"agentType": "Plan"}  # the last metadata wins
    main_file = mirror.root / PROJECT / f"{SID}.jsonl"
    assert oct(main_file.stat().st_mode & 0o777) == "0o600"

    with open(main_file, "ab") as fh:  # changed behind the mirror's back
        fh.write(b'{"type":"user","uuid":"planted"}\n')
    await store.append(MAIN, [row("u3", 3)])
    tails = await store.load_tails(PROJECT, [SID], mirror.held(PROJECT, [SID]))
    _, stale = mirror.apply(PROJECT, [SID], tails)
    assert stale == {SID}
    mirror.forget(PROJECT, stale)
    change, _ = mirror.apply(PROJECT, [SID], await store.load_tails(PROJECT, [SID], {}))
    assert main_file in change.written and b"planted" not in main_file.read_bytes()
    assert main_file.read_bytes().count(b"\n") == 4

    await store.delete(MAIN)
    change, _ = mirror.apply(PROJECT, [SID], await store.load_tails(PROJECT, [SID], mirror.held(PROJECT, [SID])))
    assert main_file in change.removed and files_under(mirror.root) == {}


def test_an_unsafe_key_never_becomes_a_path(tmp_path: Path, pg_server, pg_schema) -> None:
    async def run() -> set[str]:
        async with PostgresSessionStore(pg_server.url(), schema=pg_schema) as s:
            await s.append({"project_key": "..", "session_id": SID}, [row("u1", 1)])
            await s.append({"project_key": PROJECT, "session_id": "../../escape"}, [row("u1", 1)])
            mirror = StoreMirror(tmp_path / "mirror")
            for project in ("..", PROJECT):
                mirror.apply(project, None, await s.load_tails(project, None, {}))
        return {str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")}

    assert asyncio.run(run()) == {"mirror"}
