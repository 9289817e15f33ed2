"""`session-lsp fork ID --store URL [--into local]` over a real PostgreSQL store: the fork is the one
`storage.fork` makes of the same transcript locally (modulo the new ids), the store gives it back
to `chain --store`, and the real CLI resumes a fork written into the local folder."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import TESTS
from test_store_commands import CORPUS, cli, mirror_corpus

from storage.fork import fork_session
from storage.pgstore import PostgresSessionStore
from storage.resume import resume
from storage.store_sync import file_rows

GENERATED = TESTS / "corpus" / "generated" / "projects"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def store_rows(url: str, schema: str, project_key: str, session_id: str) -> list[Any]:
    async def load() -> list[Any]:
        store = PostgresSessionStore(url, schema=schema, read_only=True)
        try:
            return await store.load({"project_key": project_key, "session_id": session_id}) or []
        finally:
            await store.close()

    return asyncio.run(load())


def modulo_new_ids(rows: list[Any], source_ids: set[str]) -> list[Any]:
    """The rows with every id that is not one of the source's (the new session id, fresh uuids)
    replaced by its order of first appearance."""
    names: dict[str, str] = {}

    def name(m: re.Match[str]) -> str:
        found = m.group(0)
        return found if found in source_ids else names.setdefault(found, f"new-{len(names)}")

    return [json.loads(UUID.sub(name, json.dumps(r))) for r in rows]


def source_ids(path: Path) -> set[str]:
    return set(UUID.findall(path.read_text(encoding="utf-8")))


@pytest.fixture
def store_url(pg_server, pg_schema) -> str:  # type: ignore[no-untyped-def]
    asyncio.run(mirror_corpus(PostgresSessionStore(pg_server.url(), schema=pg_schema)))
    return pg_server.url()


@pytest.mark.parametrize("kind", ["whole-chain", "at-message"])
def test_fork_into_the_store_is_the_local_fork(store_url: str, pg_schema: str, tmp_path: Path, kind: str) -> None:
    local = tmp_path / "projects"
    shutil.copytree(CORPUS, local)
    mains = sorted(local.glob("*/*.jsonl"))
    assert len(mains) == 4
    for source in mains:
        src = resume(source)
        at = [r for r in src.chain.rows if r.type == "assistant"][-2].uuid if kind == "at-message" else None
        args = ["fork", source.stem, "--store", store_url, "--store-schema", pg_schema, "--title", "t", "--json"]
        done = cli(*args, *(["--at", at] if at else []))
        assert done.returncode == 0, done.stderr
        made = json.loads(done.stdout)
        new_sid = made["sessionId"]
        assert made["into"] == "store" and made["path"] == f"{source.parent.name}/{new_sid}.jsonl"
        ours = store_rows(store_url, pg_schema, source.parent.name, new_sid)
        _, path = fork_session(source, local, at_uuid=at, title="t")
        want = file_rows(path)
        assert len(ours) == made["rows"] == len(want) > 2
        ids = source_ids(source)
        assert modulo_new_ids(ours, ids) == modulo_new_ids(want, ids), source.name
        assert {r["sessionId"] for r in ours if "sessionId" in r} == {new_sid}
        # the store gives the fork back as the conversation the local fork resumes to
        chain = cli("chain", new_sid, "--store", store_url, "--store-schema", pg_schema, "--json")
        assert chain.returncode == 0, chain.stderr
        want_chain = resume(path, effort_statement=True).to_json()
        got_chain = {**json.loads(chain.stdout), "path": None}
        assert got_chain["sessionId"] == new_sid and len(got_chain["uuids"]) > 1
        assert modulo_new_ids([got_chain], ids) == modulo_new_ids([{**want_chain, "path": None}], ids)
        if at is None:
            assert resume(path).messages == src.messages


def test_a_bad_fork_is_one_line_and_writes_nothing(store_url: str, pg_schema: str) -> None:
    sid = "22222222-2222-4222-8222-222222222222"
    args = ["fork", sid, "--store", store_url, "--store-schema", pg_schema, "--json"]
    before = cli("list", "--store", store_url, "--store-schema", pg_schema, "--json")
    bad = cli(*args, "--at", "00000000-0000-4000-8000-000000000000")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "no message 00000000" in bad.stderr
    wrong = cli("fork", sid, "--into", "local")
    assert wrong.returncode == 2 and "--into goes with --store" in wrong.stderr
    after = cli("list", "--store", store_url, "--store-schema", pg_schema, "--json")
    assert len(json.loads(after.stdout)) == len(json.loads(before.stdout)) == 4


@pytest.mark.realcli
@pytest.mark.slow
def test_fork_into_local_is_resumed_by_the_real_cli(pg_server, pg_schema, scripted_model, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from realcli import find_claude
    from test_interop_write import assert_cli_sees, resume_with_cli

    binary = find_claude()
    if binary is None:
        pytest.skip("REAL CLI NOT AVAILABLE (run scripts/setup.d/claude-cli.sh)")
    shop_project = GENERATED / "-tmp-slsp-corpus-shop"
    mirrored = tmp_path / "mirrored"
    shutil.copytree(shop_project, mirrored / shop_project.name)
    asyncio.run(mirror_corpus(PostgresSessionStore(pg_server.url(), schema=pg_schema), root=mirrored))
    mirrored_sessions = len(list(mirrored.glob("*/*.jsonl")))
    Path("/tmp/slsp-corpus/shop").mkdir(parents=True, exist_ok=True)
    config = tmp_path / "config"
    env = {"shop": Path("/tmp/slsp-corpus/shop"), "config": config, "projects": config / "projects"}
    for sid in ("22222222-2222-4222-8222-222222222222", "d31a4daa-f5b8-4d73-979d-614c6c4d29bf"):
        args = ["fork", sid, "--store", pg_server.url(), "--store-schema", pg_schema, "--into", "local"]
        done = cli(*args, "--projects-dir", str(env["projects"]), "--json")
        assert done.returncode == 0, done.stderr
        made = json.loads(done.stdout)
        path = Path(made["path"])
        assert made["into"] == "local" and path == env["projects"] / shop_project.name / f"{made['sessionId']}.jsonl"
        assert path.stat().st_mode & 0o777 == 0o600
        source = mirrored / shop_project.name / f"{sid}.jsonl"
        _, local_fork = fork_session(source, mirrored)
        ids = source_ids(source)
        assert modulo_new_ids(file_rows(path), ids) == modulo_new_ids(file_rows(local_fork), ids)
        original = resume(source).messages
        assert resume(path).messages == original
        prompt = f"ORACLE {made['sessionId']}"
        sent = resume_with_cli(binary, scripted_model, env, made["sessionId"], prompt)
        assert_cli_sees(original, sent, prompt, strict_system=False)
    # the store holds only what was mirrored: a local fork writes nothing there
    listed = cli("list", "--store", pg_server.url(), "--store-schema", pg_schema, "--json")
    assert len(json.loads(listed.stdout)) == mirrored_sessions == 3


def test_the_sdk_resumes_a_fork_made_in_the_store(store_url: str, pg_schema: str, tmp_path: Path) -> None:
    from claude_agent_sdk import ClaudeAgentOptions
    from claude_agent_sdk._internal.session_resume import materialize_resume_session

    source = CORPUS / "-Users-me-shop" / "22222222-2222-4222-8222-222222222222.jsonl"
    done = cli("fork", source.stem, "--store", store_url, "--store-schema", pg_schema, "--json")
    assert done.returncode == 0, done.stderr
    new_sid = json.loads(done.stdout)["sessionId"]

    async def sdk_files() -> dict[str, bytes]:
        store = PostgresSessionStore(store_url, schema=pg_schema, read_only=True)
        try:
            got = await materialize_resume_session(
                ClaudeAgentOptions(cwd="/Users/me/shop", resume=new_sid, session_store=store)
            )
            assert got is not None
            projects = got.config_dir / "projects"
            files = {str(p.relative_to(projects)): p.read_bytes() for p in projects.rglob("*") if p.is_file()}
            await got.cleanup()
            return files
        finally:
            await store.close()

    files = asyncio.run(sdk_files())
    assert sorted(files) == [f"-Users-me-shop/{new_sid}.jsonl"]
    rows = [json.loads(line) for line in files[f"-Users-me-shop/{new_sid}.jsonl"].splitlines()]
    assert rows == store_rows(store_url, pg_schema, "-Users-me-shop", new_sid)
    resumed = tmp_path / "-Users-me-shop" / f"{new_sid}.jsonl"
    resumed.parent.mkdir()
    resumed.write_bytes(files[f"-Users-me-shop/{new_sid}.jsonl"])
    assert resume(resumed).messages == resume(source).messages
    assert resume(resumed).chain.uuids == resume(source).chain.uuids
