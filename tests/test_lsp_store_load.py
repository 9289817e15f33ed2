"""The issue's load test for the server: 50 writers (5 processes of 10) mirror conversations into 100
sessions of a real PostgreSQL store at once while the real server follows it; then the server's index
equals a fresh read of the store. The lag after the last write is measured and printed (the deadline
is only a hang detector)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest_lsp
from lsprotocol import types as lsp
from lspserver import SERVER
from pytest_lsp import LanguageClient, client_capabilities
from store_chat_writer import PROJECT, session_id
from test_lsp_store import apart, plain, request, wait_for

from server.features.conversation import conversation
from storage.pgstore import PostgresSessionStore
from storage.sessions import list_sessions
from storage.store_materialize import write_session

WRITER = Path(__file__).resolve().parent / "store_chat_writer.py"
PROCS, TASKS, SESSIONS, BATCHES = 5, 10, 100, 100
DEADLINE = 60.0
"""Seconds after the last write before the test gives up: a hang detector, not the figure (that is printed)."""
COMPARED = ("sessionId", "title", "created", "modified", "messageCount", "leafUuid", "sizeBytes", "cwd", "subagents")


async def create_schema(url: str, schema: str) -> None:
    async with PostgresSessionStore(url, schema=schema):
        pass


async def read_store(url: str, schema: str, root: Path) -> dict[str, Path]:
    """The store's sessions written afresh into `root` (as `list --store` does): session id -> file."""
    import os

    out = {}
    async with PostgresSessionStore(url, schema=schema, read_only=True) as store:
        for session in await store.load_project(PROJECT):
            path = write_session(root, session, scratch=True)
            os.utime(path, ns=(session.mtime * 1_000_000, session.mtime * 1_000_000))  # epoch ms, exactly
            out[session.session_id] = path
    return out


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, projects: Path, pg_server: Any, pg_schema: str):  # type: ignore[no-untyped-def]
    apart(create_schema(pg_server.url(), pg_schema))
    lsp_client.changes = []  # type: ignore[attr-defined]
    lsp_client.protocol.fm.features.pop("sessions/didChange", None)
    lsp_client.feature("sessions/didChange")(lambda ls, params: lsp_client.changes.append(params))  # type: ignore[attr-defined]
    await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            initialization_options={
                "projectsDir": str(projects),
                "stores": [{"url": pg_server.url(), "schema": pg_schema}],
            },
        )
    )
    await wait_for(lambda: lsp_client.changes)  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


def fields(item: dict[str, Any]) -> dict[str, Any]:
    return {k: item.get(k) for k in COMPARED}


async def test_fifty_writers_into_a_hundred_sessions_then_the_index_equals_the_store(
    client: LanguageClient, pg_server: Any, pg_schema: str, tmp_path: Path
) -> None:
    url = pg_server.url()
    started = time.time()
    writers = [
        subprocess.Popen(
            [sys.executable, str(WRITER), url, pg_schema, str(p), str(TASKS), str(SESSIONS), str(BATCHES)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for p in range(PROCS)
    ]
    reports = []
    for proc in writers:  # waited for off the event loop: the client keeps reading what the server sends
        out, err = await asyncio.to_thread(proc.communicate, timeout=600)
        assert proc.returncode == 0, err
        reports.append(json.loads(out.strip().splitlines()[-1]))
    last_write = max(r["ended"] for r in reports)
    assert sum(r["errors"] for r in reports) == 0, reports

    fresh_paths = apart(read_store(url, pg_schema, tmp_path / "fresh"))
    fresh = {s.session_id: fields(s.to_json()) for s in list_sessions(tmp_path / "fresh")}
    assert sorted(fresh) == sorted(session_id(n) for n in range(SESSIONS))
    assert {s["messageCount"] for s in fresh.values()} == {2 * PROCS * TASKS}  # each writer asked once per session

    polls = 0

    async def caught_up() -> bool:
        nonlocal polls
        polls += 1
        listed = await request(client, "sessions/list", {})
        served = {s["sessionId"]: fields(s) for s in listed["sessions"] if s.get("storeId")}
        return served == fresh

    try:
        await wait_for(caught_up, timeout=DEADLINE)
    except AssertionError:
        listed = await request(client, "sessions/list", {})
        served = {s["sessionId"]: fields(s) for s in listed["sessions"] if s.get("storeId")}
        wrong = sorted(sid for sid in fresh if served.get(sid) != fresh[sid])
        diff = {k: (served.get(wrong[0], {}).get(k), v) for k, v in fresh[wrong[0]].items()} if wrong else {}
        raise AssertionError(
            f"{len(wrong)} sessions differ from the store, e.g. {diff}; stores: {listed['stores']}"
        ) from None
    seen = time.time() - last_write
    listed = await request(client, "sessions/list", {})
    updated = datetime.fromisoformat(listed["stores"][0]["updated"].replace("Z", "+00:00")).timestamp()
    lag = updated - last_write  # when the store's last change reached the index (same clock as the writers)
    # the index itself: each session's conversation (from the index's rows) ends as the fresh copy's does
    for sid, path in sorted(fresh_paths.items()):
        got = await request(client, "sessions/conversation", {"sessionId": sid, "limit": 4})
        want = conversation(path, limit=4)
        assert [i["uuid"] for i in got["items"]] == [i["uuid"] for i in want["items"]], sid
    noticed = {sid for c in client.changes for sid in plain(c)["sessionIds"]}  # type: ignore[attr-defined]
    assert noticed == set(fresh)
    appends = sum(r["appends"] for r in reports)
    print(
        f"{PROCS * TASKS} writers, {appends} appends ({2 * appends} rows with retries) into {SESSIONS} sessions in "
        f"{last_write - started:.1f} s; {len(client.changes)} sessions/didChange; "  # type: ignore[attr-defined]
        f"the last change reached the index {lag:.2f} s after the last write; sessions/list equalled a fresh read "
        f"{seen:.2f} s after it ({polls} polls)"
    )
