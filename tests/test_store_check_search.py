"""`session-lsp check --store` and `search --store` over a real PostgreSQL store: the same output as
`check` and `search` on a folder holding the same sessions (the real CLI corpus plus a damaged
copy of one of its sessions), and an unreachable store is one line on stderr."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from pg import free_port
from test_store_commands import CORPUS, cli, mirror_corpus

from server.commands.common import exit_status
from storage.errors import StoreUnavailable
from storage.pgstore import PostgresSessionStore
from storage.store_materialize import jsonl_bytes

DAMAGED = "99999999-9999-4999-8999-999999999999"


def damage(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy of a session's rows with a dropped message (its child points into the original), a metadata row of
    another session, a parent cycle and an unknown entry type."""
    rows = [{**r, "sessionId": DAMAGED} if "sessionId" in r else dict(r) for r in rows]
    messages = [i for i, r in enumerate(rows) if r.get("type") in ("user", "assistant") and r.get("uuid")]
    del rows[messages[len(messages) // 2]]
    rows.insert(messages[1], {"type": "mode", "mode": "normal", "sessionId": "00000000-0000-4000-8000-00000000abcd"})
    a, b = "aaaaaaaa-0000-4000-8000-000000000001", "aaaaaaaa-0000-4000-8000-000000000002"
    base = {"type": "user", "isSidechain": False, "sessionId": DAMAGED, "timestamp": "2026-11-29T23:09:00.000Z"}
    rows.append({**base, "parentUuid": b, "uuid": a, "message": {"role": "user", "content": "loop one"}})
    rows.append({**base, "parentUuid": a, "uuid": b, "message": {"role": "user", "content": "loop two"}})
    rows.append({"type": "mystery-entry", "sessionId": DAMAGED})
    return rows


@pytest.fixture
def folder_and_store(pg_server, pg_schema, tmp_path: Path) -> tuple[Path, str]:  # type: ignore[no-untyped-def]
    """A projects folder (the corpus plus a damaged session) and a store holding the same."""
    local = tmp_path / "projects"
    shutil.copytree(CORPUS, local)
    source = CORPUS / "-Users-me-other" / "1c99f271-c426-49f7-9ae1-2b8728ab22c4.jsonl"
    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    (local / "-Users-me-other" / f"{DAMAGED}.jsonl").write_bytes(jsonl_bytes(damage(rows)))
    asyncio.run(mirror_corpus(PostgresSessionStore(pg_server.url(), schema=pg_schema), root=local))
    return local, pg_server.url()


def relative(items: list[dict[str, Any]], root: Path) -> list[dict[str, Any]]:
    """Paths in JSON output (top level and `related`) relative to the projects folder."""
    out = []
    for item in items:
        item = {**item, "path": str(Path(item["path"]).relative_to(root))}
        if "related" in item:
            item["related"] = [{**r, "path": str(Path(r["path"]).relative_to(root))} for r in item["related"]]
        out.append(item)
    return out


def test_check_store_equals_check_of_the_folder(folder_and_store, pg_schema) -> None:  # type: ignore[no-untyped-def]
    local, url = folder_and_store
    from_store = cli("check", "--store", url, "--store-schema", pg_schema, "--json")
    from_folder = cli("check", "--projects-dir", str(local), "--json", "-j", "1")
    assert from_store.returncode == from_folder.returncode == 1, (from_store.stderr, from_folder.stderr)
    ours = json.loads(from_store.stdout)
    want = relative(json.loads(from_folder.stdout), local.resolve())
    codes = {d["code"] for d in ours}
    assert {"parent-cycle", "cross-file-parent", "session-id-mismatch", "unknown-type"} <= codes, codes
    assert ours == want
    assert all(d["path"] == f"-Users-me-other/{DAMAGED}.jsonl" for d in ours)

    listing = cli("check", "--store", url, "--store-schema", pg_schema)
    folder_listing = cli("check", "--projects-dir", str(local), "-j", "1")
    assert listing.stdout == folder_listing.stdout.replace(f"{local.resolve()}/", "")
    assert "file(s) checked: " in listing.stdout

    shop_only = cli("check", "--store", url, "--store-schema", pg_schema, "--cwd", "/Users/me/shop", "--json")
    assert shop_only.returncode == 0 and json.loads(shop_only.stdout) == []


def _hit_key(hit: dict[str, Any]) -> tuple[str, int, str]:
    return hit["path"], hit["line"], hit["kind"]


@pytest.mark.parametrize("words", ["hello", "echo", "loop", "export const aud"])
def test_search_store_equals_search_of_the_folder(folder_and_store, pg_schema, words: str) -> None:  # type: ignore[no-untyped-def]
    local, url = folder_and_store
    from_store = cli("search", *words.split(), "--store", url, "--store-schema", pg_schema, "--json")
    from_folder = cli("search", *words.split(), "--projects-dir", str(local), "--json")
    assert from_store.returncode == from_folder.returncode == 0, (from_store.stderr, from_folder.stderr)
    ours = json.loads(from_store.stdout)
    assert ours, f"no hit for {words!r}"
    # the same hits; among equally ranked ones the newer file comes first, and a store's write times
    # are not the folder's file times, so their order is compared apart from ties
    theirs = relative(json.loads(from_folder.stdout), local.resolve())
    assert sorted(ours, key=_hit_key) == sorted(theirs, key=_hit_key)


def test_search_store_narrowed_to_a_project(folder_and_store, pg_schema) -> None:  # type: ignore[no-untyped-def]
    _, url = folder_and_store
    args = ("search", "echo", "--store", url, "--store-schema", pg_schema, "--json")
    everywhere = {h["path"].split("/")[0] for h in json.loads(cli(*args).stdout)}
    other = {h["path"].split("/")[0] for h in json.loads(cli(*args, "--cwd", "/Users/me/other").stdout)}
    assert len(everywhere) > 1 and other == {"-Users-me-other"}


def test_an_unreachable_store_is_one_line(tmp_path: Path) -> None:
    url = f"postgresql://postgres@127.0.0.1:{free_port()}/postgres"
    status = exit_status(StoreUnavailable("down"))
    sid = "22222222-2222-4222-8222-222222222222"
    for args in (
        ["check", "--store", url, "--json"],
        ["search", "hello", "--store", url],
        ["fork", sid, "--store", url],
        ["fork", sid, "--store", url, "--into", "local", "--projects-dir", str(tmp_path)],
        ["push", sid, "--store", url, "--projects-dir", str(tmp_path)],
        ["turn", "--store", url, "--resume", sid, "--projects-dir", str(tmp_path), "--provider", "anthropic", "hi"],
    ):
        done = cli(*args)
        assert done.returncode == status == 2, (args, done.stderr)
        assert done.stderr.count("\n") == 1 and "cannot connect to PostgreSQL at 127.0.0.1" in done.stderr, args
        assert done.stdout == ""
    assert not any(tmp_path.iterdir())
