"""A shared store holding a session whose key no file can have (a `.` project, an overlong id, a
subpath climbing out) over a real PostgreSQL store: `list`, `check` and `search --store` leave that
session out, naming it on stderr, and give every other session as a store without it does;
`chain --store` of the odd session is one line, no traceback."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from test_store_commands import CORPUS, cli, mirror_corpus

from storage.pgstore import PostgresSessionStore

LONG_ID = "s" * 300
ODD = [
    ({"project_key": ".", "session_id": "0d0d0d0d-0000-4000-8000-000000000001"}, None),
    ({"project_key": "-Users-me-odd", "session_id": LONG_ID}, None),
    ({"project_key": "-Users-me-odd", "session_id": "0d0d0d0d-0000-4000-8000-000000000002"}, "../../../escaped"),
]


def _row(session_id: str) -> dict[str, Any]:
    return {
        "type": "user",
        "parentUuid": None,
        "uuid": "0d0d0d0d-0000-4000-8000-0000000000ff",
        "sessionId": session_id,
        "timestamp": "2026-11-30T10:00:00.000Z",
        "message": {"role": "user", "content": "oddkeyword in an odd session"},
    }


async def _fill(url: str, schema: str, odd: bool) -> None:
    await mirror_corpus(PostgresSessionStore(url, schema=schema))
    if not odd:
        return
    store = PostgresSessionStore(url, schema=schema)
    try:
        for key, subpath in ODD:
            await store.append(key, [_row(key["session_id"])])
            if subpath is not None:
                await store.append({**key, "subpath": subpath}, [_row(key["session_id"])])
    finally:
        await store.close()


@pytest.fixture
def stores(pg_server, pg_schema) -> tuple[str, str, str]:  # type: ignore[no-untyped-def]
    """(url, a schema with the corpus, a schema with the corpus and the odd sessions)."""
    asyncio.run(_fill(pg_server.url(), pg_schema, odd=False))
    asyncio.run(_fill(pg_server.url(), pg_schema + "_odd", odd=True))
    return pg_server.url(), pg_schema, pg_schema + "_odd"


def _same(out: Any) -> Any:
    """The output without the store's write times (the two schemas were written a moment apart)."""
    return [{k: v for k, v in item.items() if k != "modified"} for item in out]


def test_a_session_no_file_can_hold_is_left_out(stores, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    url, plain, odd = stores

    def run(schema: str, *args: str) -> Any:
        return cli(*args, "--store", url, "--store-schema", schema)

    for args in (["list", "--json"], ["check", "--json"], ["search", "echo", "--json"]):
        with_odd, without = run(odd, *args), run(plain, *args)
        assert without.returncode in (0, 1), without.stderr
        assert with_odd.returncode == without.returncode, with_odd.stderr  # on main: 1 or 2, nothing listed
        assert _same(json.loads(with_odd.stdout)) == _same(json.loads(without.stdout))
        skipped = [line for line in with_odd.stderr.splitlines() if "skipped" in line]
        assert len(skipped) == len(ODD), with_odd.stderr
        for reason in ("session '.'/", "a name longer than 255 bytes", "unsafe subpath '../../../escaped'"):
            assert sum(reason in line for line in skipped) == 1, (reason, skipped)
    assert json.loads(run(plain, "list", "--json").stdout)  # the corpus is there to compare
    assert len(list(CORPUS.glob("*/*.jsonl"))) == len(json.loads(run(odd, "list", "--json").stdout))

    chain = run(odd, "chain", LONG_ID)
    assert chain.returncode == 2 and "Traceback" not in chain.stderr
    assert chain.stderr.startswith("session-lsp: ") and "longer than 255 bytes" in chain.stderr
