"""`session-lsp list --store`, `chain --store` and `pull` over a real PostgreSQL store holding the
real CLI corpus, mirrored as the Agent SDK mirrors it; compared with reading the files directly
and with the SDK's own resume materialisation."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions
from claude_agent_sdk._internal.session_resume import materialize_resume_session

from storage.pgstore import PostgresSessionStore
from storage.resume import resume
from storage.sessions import list_sessions

CORPUS = Path(__file__).resolve().parent / "corpus" / "claude-code-2.1.328" / "projects"
FILE_ONLY = ("path", "projectDir", "modified", "sizeBytes")
"""What a store cannot give as the folder does: where the file is, its mtime and byte size."""


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "server.cli", *args], capture_output=True, text=True, timeout=120)


async def mirror_corpus(store: PostgresSessionStore, batch: int = 5, root: Path = CORPUS) -> int:
    """Append every transcript of `root` (the corpus) in batches, subagents under their subpath
    with the `.meta.json` as an `agent_metadata` entry, as the SDK's mirror does; returns the
    entry count."""
    count = 0
    for main in sorted(root.glob("*/*.jsonl")):
        key = {"project_key": main.parent.name, "session_id": main.stem}
        files = [(key, main)]
        for sub in sorted((main.parent / main.stem).glob("subagents/*.jsonl")):
            files.append(({**key, "subpath": f"subagents/{sub.stem}"}, sub))
        for k, path in files:
            rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            meta = path.with_name(path.stem + ".meta.json")
            if meta.exists():
                rows.append({"type": "agent_metadata", **json.loads(meta.read_text())})
            for start in range(0, len(rows), batch):
                await store.append(k, rows[start : start + batch])
            count += len(rows)
    await store.close()
    return count


@pytest.fixture
def corpus_store(pg_server, pg_schema) -> str:  # type: ignore[no-untyped-def]
    asyncio.run(mirror_corpus(PostgresSessionStore(pg_server.url(), schema=pg_schema)))
    return pg_server.url()


def _without_file_fields(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {}
    for item in items:
        item = {k: v for k, v in item.items() if k not in FILE_ONLY}
        item["subagents"] = [{k: v for k, v in s.items() if k != "path"} for s in item["subagents"]]
        out[item["sessionId"]] = item
    return out


def test_list_store_equals_listing_the_folder(corpus_store, pg_schema) -> None:
    done = cli("list", "--store", corpus_store, "--store-schema", pg_schema, "--json")
    assert done.returncode == 0, done.stderr
    from_store = json.loads(done.stdout)
    from_files = [info.to_json() for info in list_sessions(CORPUS, count=True)]
    assert len(from_store) == len(from_files) == 4
    assert _without_file_fields(from_store) == _without_file_fields(from_files)
    by_id = {s["sessionId"]: s for s in from_store}
    sub = by_id["22222222-2222-4222-8222-222222222222"]
    assert sub["path"] == "-Users-me-shop/22222222-2222-4222-8222-222222222222.jsonl"
    assert sub["subagents"][0]["path"].endswith("subagents/agent-a88b3ce23b875db07.jsonl")

    only_other = cli("list", "--store", corpus_store, "--store-schema", pg_schema, "--cwd", "/Users/me/other", "--json")
    assert [s["sessionId"] for s in json.loads(only_other.stdout)] == ["1c99f271-c426-49f7-9ae1-2b8728ab22c4"]


def test_chain_store_equals_chain_of_the_file(corpus_store, pg_schema) -> None:
    mains = sorted(CORPUS.glob("*/*.jsonl"))
    for main, bare in [(m, False) for m in mains] + [(mains[0], True)]:
        got = cli(
            "chain",
            main.stem,
            "--store",
            corpus_store,
            "--store-schema",
            pg_schema,
            "--json",
            *(["--bare"] if bare else []),
        )
        assert got.returncode == 0, got.stderr
        want = json.loads(json.dumps(resume(main, bare=bare, effort_statement=True).to_json()))
        ours = json.loads(got.stdout)
        assert ours["path"] == f"{main.parent.name}/{main.name}"
        assert {**ours, "path": None} == {**want, "path": None}, main.name


def test_chain_store_continue_takes_the_projects_latest_session(corpus_store, pg_schema) -> None:
    got = cli(
        "chain", "--continue", "--cwd", "/Users/me/shop", "--store", corpus_store, "--store-schema", pg_schema, "--json"
    )
    assert got.returncode == 0, got.stderr
    # mirrored in name order, so the last written session of /Users/me/shop is d864acd2
    assert json.loads(got.stdout)["sessionId"] == "d864acd2-d28b-43ce-b430-2208a10860fe"


def test_chain_store_errors_are_one_line(corpus_store, pg_schema) -> None:
    missing = cli("chain", "00000000-0000-4000-8000-000000000000", "--store", corpus_store, "--store-schema", pg_schema)
    assert missing.returncode == 2 and "no session 00000000-0000-4000-8000-000000000000" in missing.stderr
    bad = cli("list", "--store", "mysql://x", "--json")
    assert bad.returncode == 2 and "postgresql://" in bad.stderr
    no_schema = cli("list", "--store", corpus_store, "--store-schema", "nothing_here", "--json")
    assert no_schema.returncode == 2 and "no session store" in no_schema.stderr


def test_pull_writes_what_the_sdk_materialises_for_a_resume(corpus_store, pg_schema, tmp_path: Path) -> None:
    sid = "22222222-2222-4222-8222-222222222222"
    local = tmp_path / "projects"
    done = cli("pull", sid, "--store", corpus_store, "--store-schema", pg_schema, "--projects-dir", str(local))
    assert done.returncode == 0, done.stderr

    async def sdk_materialise() -> dict[str, bytes]:
        store = PostgresSessionStore(corpus_store, schema=pg_schema, read_only=True)
        try:
            got = await materialize_resume_session(
                ClaudeAgentOptions(cwd="/Users/me/shop", resume=sid, session_store=store)
            )
            assert got is not None
            files = {
                str(p.relative_to(got.config_dir / "projects")): p.read_bytes()
                for p in (got.config_dir / "projects").rglob("*")
                if p.is_file()
            }
            await got.cleanup()
            return files
        finally:
            await store.close()

    sdk_files = asyncio.run(sdk_materialise())
    ours = {str(p.relative_to(local)): p.read_bytes() for p in local.rglob("*") if p.is_file()}
    assert (
        sorted(ours)
        == sorted(sdk_files)
        == [
            f"-Users-me-shop/{sid}.jsonl",
            f"-Users-me-shop/{sid}/subagents/agent-a88b3ce23b875db07.jsonl",
            f"-Users-me-shop/{sid}/subagents/agent-a88b3ce23b875db07.meta.json",
        ]
    )
    assert ours == sdk_files
    assert all((local / name).stat().st_mode & 0o777 == 0o600 for name in ours)
    # the pulled file reads as the original does
    original = resume(CORPUS / "-Users-me-shop" / f"{sid}.jsonl", effort_statement=True).to_json()
    pulled = resume(local / "-Users-me-shop" / f"{sid}.jsonl", effort_statement=True).to_json()
    assert {**pulled, "path": None} == {**original, "path": None}

    # again: the same content is left as it is; other content is never overwritten
    again = cli("pull", sid, "--store", corpus_store, "--store-schema", pg_schema, "--projects-dir", str(local))
    assert again.returncode == 0, again.stderr
    main = local / "-Users-me-shop" / f"{sid}.jsonl"
    main.write_bytes(main.read_bytes() + b'{"type":"tag","tag":"local"}\n')
    before = main.read_bytes()
    clash = cli("pull", sid, "--store", corpus_store, "--store-schema", pg_schema, "--projects-dir", str(local))
    assert clash.returncode == 2 and "not overwritten" in clash.stderr
    assert main.read_bytes() == before


def test_the_command_line_does_not_import_psycopg_unless_a_store_is_used() -> None:
    code = (
        "import sys, server.cli; server.cli.build_parser(); "
        "server.cli.main(['list', '--projects-dir', sys.argv[1], '--json']); "
        "assert 'psycopg' not in sys.modules and 'storage.pgstore' not in sys.modules, 'imported'"
    )
    done = subprocess.run([sys.executable, "-c", code, str(CORPUS)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)
