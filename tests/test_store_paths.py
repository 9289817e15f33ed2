"""A store session's local copy is decided like every other transcript (`storage.access`) and
written under the session's writer lock (`storage.admission`), over a real PostgreSQL store:
a symlinked project folder, session folder or transcript that leads out of the projects folder
is neither appended to (`bring_local`) nor read and sent (`push`); a store key that is not a
project folder and a session UUID is refused; and neither direction runs while another writer
holds the session."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from typing import Any

import pytest
from test_store_commands import CORPUS, cli, mirror_corpus

from server.agent.store_turn import in_loop
from storage.admission import admit
from storage.errors import InUse, InvalidArgument, OutsideProjects
from storage.pgstore import PostgresSessionStore
from storage.store_materialize import jsonl_bytes
from storage.store_sync import bring_local, file_rows, push_session

SID = "1c99f271-c426-49f7-9ae1-2b8728ab22c4"
PROJECT = "-Users-me-other"
KEY = {"project_key": PROJECT, "session_id": SID}
EXTRA = {"type": "user", "uuid": "0e6a1c1e-7d7b-4b53-9d1a-000000000001", "sessionId": SID, "secret": "outside"}


@pytest.fixture
def store_url(pg_server, pg_schema) -> str:  # type: ignore[no-untyped-def]
    asyncio.run(mirror_corpus(PostgresSessionStore(pg_server.url(), schema=pg_schema)))
    return pg_server.url()


def load(url: str, schema: str, key: dict[str, str] = KEY) -> list[Any]:
    store = PostgresSessionStore(url, schema=schema)
    return in_loop(store, store.load(key)) or []


def corpus_rows() -> list[Any]:
    return file_rows(CORPUS / PROJECT / f"{SID}.jsonl")


def test_catch_up_never_appends_through_a_symlinked_project_folder(store_url, pg_schema, tmp_path) -> None:  # type: ignore[no-untyped-def]
    local, outside = tmp_path / "config" / "projects", tmp_path / "outside"
    local.mkdir(parents=True)
    outside.mkdir()
    victim = outside / f"{SID}.jsonl"
    victim.write_bytes(jsonl_bytes(corpus_rows()[:5]))  # a start of the store's rows
    before = victim.read_bytes()
    (local / PROJECT).symlink_to(outside, target_is_directory=True)

    store = PostgresSessionStore(store_url, schema=pg_schema)
    with pytest.raises(OutsideProjects, match="outside the projects folder"):
        in_loop(store, bring_local(store, local, PROJECT, SID))
    assert victim.read_bytes() == before and sorted(p.name for p in outside.iterdir()) == [victim.name]

    # a projects folder that is itself a link (a config home kept elsewhere) is followed as before
    config = tmp_path / "linked-config"
    config.mkdir()
    (config / "projects").symlink_to(tmp_path / "config" / "projects", target_is_directory=True)
    (local / PROJECT).unlink()
    copy = in_loop(store, bring_local(store, config / "projects", PROJECT, SID))
    assert file_rows(copy) == corpus_rows() and (local / PROJECT / f"{SID}.jsonl").is_file()
    assert in_loop(store, push_session(store, config / "projects", PROJECT, SID)) == 0


def test_push_never_sends_a_file_outside_the_projects_folder(store_url, pg_schema, tmp_path) -> None:  # type: ignore[no-untyped-def]
    local, outside = tmp_path / "config" / "projects", tmp_path / "outside"
    (local / PROJECT).mkdir(parents=True)
    outside.mkdir()
    secret = outside / "secret.jsonl"
    secret.write_bytes(jsonl_bytes([*corpus_rows(), EXTRA]))
    copy = local / PROJECT / f"{SID}.jsonl"
    store_args = ("--store", store_url, "--store-schema", pg_schema, "--projects-dir", str(local))

    # the session's transcript is a link to a file elsewhere
    copy.symlink_to(secret)
    done = cli("push", SID, *store_args)
    assert done.returncode != 0 and "outside the projects folder" in done.stderr, done.stderr
    assert load(store_url, pg_schema) == corpus_rows()

    # the session's folder is a link to a folder elsewhere holding a subagent transcript
    copy.unlink()
    copy.write_bytes(jsonl_bytes(corpus_rows()))
    (outside / "subagents").mkdir()
    (outside / "subagents" / "agent-a1.jsonl").write_bytes(jsonl_bytes([{**EXTRA, "isSidechain": True}]))
    (local / PROJECT / SID).symlink_to(outside, target_is_directory=True)
    done = cli("push", SID, *store_args)
    assert done.returncode != 0 and "outside the projects folder" in done.stderr, done.stderr
    assert load(store_url, pg_schema, {**KEY, "subpath": "subagents/agent-a1"}) == []
    assert load(store_url, pg_schema) == corpus_rows()


def test_a_store_key_that_is_not_a_local_session_is_refused(store_url, pg_schema, tmp_path) -> None:  # type: ignore[no-untyped-def]
    local = tmp_path / "config" / "projects"
    (local / PROJECT).mkdir(parents=True)
    outside = tmp_path / "config" / "outside"
    outside.mkdir()
    secret = outside / f"{SID}.jsonl"
    secret.write_bytes(jsonl_bytes([EXTRA]))
    climbing = f"../outside/{SID}"  # resolves to the file above from <projects>/<project>/
    store = PostgresSessionStore(store_url, schema=pg_schema)

    with pytest.raises(InvalidArgument, match="not a session id"):
        in_loop(store, push_session(store, local, PROJECT, climbing))
    assert load(store_url, pg_schema, {"project_key": PROJECT, "session_id": climbing}) == []
    with pytest.raises(InvalidArgument, match="not a project folder name"):
        in_loop(store, push_session(store, local, "..", SID))
    with pytest.raises(InvalidArgument, match="not a session id"):
        in_loop(store, bring_local(store, local, PROJECT, climbing))
    assert secret.read_bytes() == jsonl_bytes([EXTRA]) and sorted(p.name for p in local.iterdir()) == [PROJECT]


def test_push_and_catch_up_wait_for_the_session_writer(store_url, pg_schema, tmp_path) -> None:  # type: ignore[no-untyped-def]
    local = tmp_path / "config" / "projects"
    (local / PROJECT).mkdir(parents=True)
    copy = local / PROJECT / f"{SID}.jsonl"
    store = PostgresSessionStore(store_url, schema=pg_schema)

    # a local writer (a turn of ours) holds the session while the copy is ahead of the store
    copy.write_bytes(jsonl_bytes([*corpus_rows(), EXTRA]))
    with admit(SID, config_dir=local.parent, register=False):
        done = cli("push", SID, "--store", store_url, "--store-schema", pg_schema, "--projects-dir", str(local))
        assert done.returncode != 0 and "already in use" in done.stderr, done.stderr
        assert load(store_url, pg_schema) == corpus_rows()

        # ... and while the copy is behind the store
        behind = jsonl_bytes(corpus_rows()[:5])
        copy.write_bytes(behind)
        with pytest.raises(InUse, match="already in use"):
            in_loop(store, bring_local(store, local, PROJECT, SID))
        assert copy.read_bytes() == behind

    # once it is done, both go through
    assert in_loop(store, bring_local(store, local, PROJECT, SID)) == copy
    assert file_rows(copy) == corpus_rows()
    copy.write_bytes(jsonl_bytes([*corpus_rows(), EXTRA]))
    done = cli("push", SID, "--store", store_url, "--store-schema", pg_schema, "--projects-dir", str(local), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["pushed"] == 1 and load(store_url, pg_schema) == [*corpus_rows(), EXTRA]


def test_pull_leaves_a_fifo_or_a_link_where_the_copy_goes(store_url, pg_schema, tmp_path) -> None:  # type: ignore[no-untyped-def]
    local, outside = tmp_path / "config" / "projects", tmp_path / "outside"
    (local / PROJECT).mkdir(parents=True)
    outside.mkdir()
    copy = local / PROJECT / f"{SID}.jsonl"
    pull = [sys.executable, "-m", "server.cli", "pull", SID, "--store", store_url, "--store-schema", pg_schema]
    pull += ["--projects-dir", str(local)]

    os.mkfifo(copy)  # on main: pull opens it to compare and waits for a writer forever
    done = subprocess.run(pull, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "is not a regular file; not overwritten" in done.stderr, done.stderr
    assert stat.S_ISFIFO(os.lstat(copy).st_mode)

    # a link to a file elsewhere holding the same session: refused, not reported as the pulled copy
    copy.unlink()
    (outside / "same.jsonl").write_bytes(jsonl_bytes(corpus_rows()))
    copy.symlink_to(outside / "same.jsonl")
    done = subprocess.run(pull, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "leads out of the projects folder" in done.stderr, done.stderr
    assert copy.is_symlink() and (outside / "same.jsonl").read_bytes() == jsonl_bytes(corpus_rows())

    # a project folder that links out: refused before anything is read or written there
    copy.unlink()
    (local / PROJECT).rmdir()
    (local / PROJECT).symlink_to(outside, target_is_directory=True)
    (outside / f"{SID}.jsonl").write_bytes(jsonl_bytes(corpus_rows()))
    done = subprocess.run(pull, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "leads out of the projects folder" in done.stderr, done.stderr
    assert sorted(p.name for p in outside.iterdir()) == sorted(["same.jsonl", f"{SID}.jsonl"])


def test_pull_writes_only_a_session_whose_id_is_a_uuid(store_url, pg_schema, tmp_path) -> None:  # type: ignore[no-untyped-def]
    local = tmp_path / "config" / "projects"
    (local / PROJECT / "memory").mkdir(parents=True)  # the CLI's project memory folder
    store = PostgresSessionStore(store_url, schema=pg_schema)
    key = {"project_key": PROJECT, "session_id": "memory"}
    in_loop(store, store.append(key, corpus_rows()))
    store = PostgresSessionStore(store_url, schema=pg_schema)
    in_loop(store, store.append({**key, "subpath": "MEMORY"}, corpus_rows()[:2]))

    args = ("--store", store_url, "--store-schema", pg_schema, "--projects-dir", str(local))
    done = cli("pull", "memory", *args)
    assert done.returncode == 2 and "'memory' is not a session id" in done.stderr, done.stderr
    # on main: <project>/memory.jsonl and <project>/memory/MEMORY.jsonl
    assert sorted(str(p.relative_to(local)) for p in local.rglob("*")) == [PROJECT, f"{PROJECT}/memory"]
    assert cli("chain", "memory", "--json", "--store", store_url, "--store-schema", pg_schema).returncode == 0
