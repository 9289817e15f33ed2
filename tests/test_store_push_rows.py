"""`push` after other writers appended to the store sends each local row once, over a real
PostgreSQL store: a uuid-less row (a rename's `custom-title`) is not sent again by the next push,
and a new one is not lost with rows the store already took (a batch the store would skip whole)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from scripted_api import scripted_provider
from test_store_commands import cli, mirror_corpus

from server.agent.loop import run_turn
from server.agent.request import TurnRequest
from server.agent.store_turn import in_loop
from storage.errors import StoreDiverged
from storage.pgstore import PostgresSessionStore
from storage.store_sync import bring_local, file_rows, push_session

SID = "1c99f271-c426-49f7-9ae1-2b8728ab22c4"
PROJECT = "-Users-me-other"
KEY = {"project_key": PROJECT, "session_id": SID}
ELSEWHERE = {"type": "tag", "tag": "from elsewhere", "sessionId": SID}


@pytest.fixture
def store(pg_server, pg_schema) -> PostgresSessionStore:  # type: ignore[no-untyped-def]
    asyncio.run(mirror_corpus(PostgresSessionStore(pg_server.url(), schema=pg_schema)))
    return PostgresSessionStore(pg_server.url(), schema=pg_schema)


def stored(store: PostgresSessionStore) -> list[Any]:
    return in_loop(store, store.load(KEY)) or []


def push(store: PostgresSessionStore, local: Any) -> int:
    return in_loop(store, push_session(store, local, PROJECT, SID))


def rename(local: Any, title: str) -> None:
    done = cli("rename", SID, title, "--projects-dir", str(local))
    assert done.returncode == 0, done.stderr


def test_a_rename_is_pushed_once_after_another_writer(store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    local = tmp_path / "config" / "projects"
    copy = in_loop(store, bring_local(store, local, PROJECT, SID))
    before = stored(store)
    in_loop(store, store.append(KEY, [ELSEWHERE]))
    rename(local, "renamed here")
    title = file_rows(copy)[-1]
    assert title["type"] == "custom-title" and title["customTitle"] == "renamed here"

    assert push(store, local) == 1
    assert push(store, local) == 0  # on main: 1 again, and the title stored twice
    assert push(store, local) == 0
    assert stored(store) == [*before, ELSEWHERE, title]


def test_a_rename_after_a_turn_pushed_past_another_writer_is_not_lost(store, scripted_model, tmp_path) -> None:  # type: ignore[no-untyped-def]
    local, work = tmp_path / "config" / "projects", tmp_path / "work"
    work.mkdir()
    copy = in_loop(store, bring_local(store, local, PROJECT, SID))
    before = stored(store)
    request = TurnRequest(prompt="a local turn", session=str(copy), cwd=str(work), projects_dir=local)
    run_turn(request, provider=scripted_provider(base_url=scripted_model.base_url))
    turn = file_rows(copy)[len(before) :]
    assert len(turn) >= 3 and all(r.get("uuid") for r in turn if r.get("type") in ("user", "assistant"))

    in_loop(store, store.append(KEY, [ELSEWHERE]))  # before the turn reaches the store
    assert push(store, local) == len(turn)
    rename(local, "renamed after the turn")
    title = file_rows(copy)[-1]
    assert title["customTitle"] == "renamed after the turn"

    assert push(store, local) == 1  # on main: 0, the title riding in a batch skipped as a retry
    assert push(store, local) == 0
    assert stored(store) == [*before, ELSEWHERE, *turn, title]

    # the copy now holds the store's rows in another order: a turn says so (pushing would do nothing)
    with pytest.raises(StoreDiverged, match="holds the store's rows in another order") as refused:
        in_loop(store, bring_local(store, local, PROJECT, SID))
    assert "push it" not in str(refused.value)
    held = copy.read_bytes()
    copy.rename(copy.with_name("moved-away.jsonl.bak"))
    assert file_rows(in_loop(store, bring_local(store, local, PROJECT, SID))) == stored(store)
    assert copy.with_name("moved-away.jsonl.bak").read_bytes() == held
