"""An agent turn on a session held in a real PostgreSQL store (`turn --store`, `run_store_turn`):
the turn runs against the scripted test model on a local copy, and the store then holds exactly
the copy's rows; pushing again (after a failure, or after other writers) adds nothing."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pg import free_port
from scripted_api import SCRIPTED_KEY, SCRIPTED_MODEL, scripted_provider
from test_store_commands import CORPUS, cli, mirror_corpus

from server.agent.loop import run_turn
from server.agent.request import TurnRequest
from server.agent.store_turn import in_loop, push, run_store_turn
from storage.errors import NotATranscript, StoreDiverged, StoreUnavailable
from storage.pgstore import PostgresSessionStore
from storage.store_sync import bring_local, file_rows, push_session

SID = "1c99f271-c426-49f7-9ae1-2b8728ab22c4"
PROJECT = "-Users-me-other"
KEY = {"project_key": PROJECT, "session_id": SID}


@pytest.fixture
def store_url(pg_server, pg_schema) -> str:  # type: ignore[no-untyped-def]
    asyncio.run(mirror_corpus(PostgresSessionStore(pg_server.url(), schema=pg_schema)))
    return pg_server.url()


def stored(url: str, schema: str) -> list[Any]:
    store = PostgresSessionStore(url, schema=schema)
    return in_loop(store, store.load(KEY)) or []


def append(url: str, schema: str, rows: list[Any]) -> None:
    store = PostgresSessionStore(url, schema=schema)
    in_loop(store, store.append(KEY, rows))


def chain_json(*args: str) -> dict[str, Any]:
    done = cli("chain", SID, "--json", *args)
    assert done.returncode == 0, done.stderr
    return {**json.loads(done.stdout), "path": None}


def test_turn_on_a_store_session(store_url, pg_schema, scripted_model, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("ANTHROPIC_API_KEY", SCRIPTED_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", scripted_model.base_url)
    local, work = tmp_path / "config" / "projects", tmp_path / "work"
    work.mkdir()
    copy = local / PROJECT / f"{SID}.jsonl"
    store_args = ("--store", store_url, "--store-schema", pg_schema)
    turn = ("turn", *store_args, "--resume", SID, "--cwd", str(work), "--projects-dir", str(local))
    turn += ("--provider", "anthropic", "--model", SCRIPTED_MODEL, "--json")
    before = stored(store_url, pg_schema)

    done = cli(*turn, "hello from the store")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["sessionId"] == SID and result["path"] == str(copy) and result["projectKey"] == PROJECT
    assert result["text"] == "echo: hello from the store"
    after = stored(store_url, pg_schema)
    assert after == file_rows(copy)
    assert after[: len(before)] == before and result["pushed"] == len(after) - len(before) > 0
    assert set(result["appended"]) <= {r.get("uuid") for r in after[len(before) :]}
    assert chain_json(*store_args) == chain_json("--projects-dir", str(local))
    assert chain_json(*store_args)["messages"][-1]["content"][0]["text"] == "echo: hello from the store"

    # the append step again: nothing more
    again = cli("push", SID, *store_args, "--projects-dir", str(local), "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["pushed"] == 0 and stored(store_url, pg_schema) == after

    # another writer appends to the store; the next turn catches the local copy up first
    append(store_url, pg_schema, [{"type": "tag", "tag": "from elsewhere", "sessionId": SID}])
    second = cli(*turn, "second turn")
    assert second.returncode == 0, second.stderr
    rows = file_rows(copy)
    assert stored(store_url, pg_schema) == rows and rows[: len(after) + 1] == [*after, rows[len(after)]]
    assert rows[len(after)] == {"type": "tag", "tag": "from elsewhere", "sessionId": SID}
    assert json.loads(second.stdout)["text"] == "echo: second turn"
    assert chain_json(*store_args) == chain_json("--projects-dir", str(local))


def test_a_failed_push_is_kept_and_sent_once(store_url, pg_schema, scripted_model, tmp_path) -> None:  # type: ignore[no-untyped-def]
    local, work = tmp_path / "config" / "projects", tmp_path / "work"
    work.mkdir()
    store = PostgresSessionStore(store_url, schema=pg_schema)
    copy = in_loop(store, bring_local(store, local, PROJECT, SID))
    before = stored(store_url, pg_schema)
    assert file_rows(copy) == before
    request = TurnRequest(prompt="kept locally", session=str(copy), cwd=str(work), projects_dir=local)
    run_turn(request, provider=scripted_provider(base_url=scripted_model.base_url))
    turn_rows = file_rows(copy)[len(before) :]
    assert len(turn_rows) >= 3

    down = PostgresSessionStore(f"postgresql://postgres@127.0.0.1:{free_port()}/postgres", connect_timeout=2)
    with pytest.raises(StoreUnavailable, match=f"session-lsp push {SID}"):
        push(down, local, PROJECT, SID)
    assert stored(store_url, pg_schema) == before and file_rows(copy) == before + turn_rows
    # a turn on the store session now refuses the copy that is ahead, rather than lose those rows
    with pytest.raises(StoreDiverged, match="push it"):
        run_store_turn(
            store,
            PROJECT,
            SID,
            TurnRequest(prompt="refused", cwd=str(work), projects_dir=local),
            provider=scripted_provider(base_url=scripted_model.base_url),
        )
    assert file_rows(copy) == before + turn_rows

    # meanwhile another writer appended; the retry sends the turn once, after its rows
    other = {"type": "custom-title", "customTitle": "renamed elsewhere", "sessionId": SID}
    append(store_url, pg_schema, [other])
    assert push(store, local, PROJECT, SID) == len(turn_rows)
    assert stored(store_url, pg_schema) == [*before, other, *turn_rows]
    # and again (as after a lost acknowledgement): nothing is duplicated
    assert in_loop(store, push_session(store, local, PROJECT, SID)) == 0
    assert push(store, local, PROJECT, SID) == 0
    assert stored(store_url, pg_schema) == [*before, other, *turn_rows]


def test_turn_store_needs_a_session(store_url, pg_schema, tmp_path) -> None:  # type: ignore[no-untyped-def]
    args = ("turn", "--store", store_url, "--store-schema", pg_schema, "--projects-dir", str(tmp_path / "p"))
    new = cli(*args, "--new", "hi")
    assert new.returncode == 2 and "give --resume ID" in new.stderr
    missing = cli(*args, "--resume", "00000000-0000-4000-8000-000000000000", "hi")
    assert missing.returncode == 2 and "no session 00000000-0000-4000-8000-000000000000" in missing.stderr
    assert not (tmp_path / "p").exists()


def test_a_copy_that_differs_is_left_as_it_is(store_url, pg_schema, tmp_path) -> None:  # type: ignore[no-untyped-def]
    local = tmp_path / "config" / "projects"
    store = PostgresSessionStore(store_url, schema=pg_schema)
    copy = in_loop(store, bring_local(store, local, PROJECT, SID))
    rows = file_rows(copy)
    rows[2] = {**rows[2], "edited": True}
    copy.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    before = copy.read_bytes()
    with pytest.raises(StoreDiverged, match="other rows than the store from row 3"):
        in_loop(store, bring_local(store, local, PROJECT, SID))
    # a torn line is never sent
    copy.write_bytes(before + b'{"type":"user","uuid":"torn')
    with pytest.raises(NotATranscript, match=f"{SID}.jsonl:{len(rows) + 1}: not a JSON line"):
        in_loop(store, push_session(store, local, PROJECT, SID))
    assert copy.read_bytes() == before + b'{"type":"user","uuid":"torn'
    assert stored(store_url, pg_schema) == file_rows(CORPUS / PROJECT / f"{SID}.jsonl")
