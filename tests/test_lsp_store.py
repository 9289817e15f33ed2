"""The real server over stdio serves the sessions of a real PostgreSQL session store beside the local
folder: listed under their store, the same chain as the transcript read locally, hover and diagnostics
on their read-only `session-store:` documents, another writer's appends arriving as
`sessions/didChange`, writes into them refused, and a bad `stores` option refused at `initialize`."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from conftest import CORPUS
from lsprotocol import types as lsp
from lspserver import SERVER
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient, client_capabilities
from rawlsp import RawServer

from storage.pgstore import PostgresSessionStore
from storage.resume import resume
from storage.store_materialize import StoreSession, jsonl_bytes, write_session

SHOP = "-Users-me-shop"
S1 = "11111111-1111-4111-8111-111111111111"
S2 = "22222222-2222-4222-8222-222222222222"
DAMAGED = "33333333-3333-4333-8333-333333333333"
WRITER = Path(__file__).resolve().parent / "store_writer.py"


def entries_of(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def corpus_keys() -> dict[tuple[str, str, str], list[Any]]:
    """Every file of the shared corpus as store keys -> entries, as the SDK mirrors them; plus DAMAGED:
    S1 without its row 21 (a dangling parent), under another session id (a session-id mismatch)."""
    keys: dict[tuple[str, str, str], list[Any]] = {}
    root = CORPUS / "projects"
    for path in sorted(root.glob("*/*.jsonl")):
        keys[(path.parent.name, path.stem, "")] = entries_of(path)
    for path in sorted(root.glob("*/*/subagents/agent-*.jsonl")):
        project, sid = path.parts[-4], path.parts[-3]
        subpath = f"subagents/{path.stem}"
        entries = entries_of(path)
        meta = path.with_name(path.stem + ".meta.json")
        if meta.exists():
            entries.append({"type": "agent_metadata", **json.loads(meta.read_text())})
        keys[(project, sid, subpath)] = entries
    s1 = keys[(SHOP, S1, "")]
    keys[(SHOP, DAMAGED, "")] = s1[:21] + s1[22:]
    return keys


async def fill(url: str, schema: str, keys: dict[tuple[str, str, str], list[Any]]) -> None:
    async with PostgresSessionStore(url, schema=schema) as store:
        for (project, sid, subpath), entries in keys.items():
            key = {"project_key": project, "session_id": sid, **({"subpath": subpath} if subpath else {})}
            await store.append(key, entries)


def checked_locally(keys: dict[tuple[str, str, str], list[Any]], tmp_path: Path) -> dict[str, list[tuple[int, str]]]:
    """`session-lsp check --json` of the store's sessions written into a local folder as the SDK writes
    them: relative path -> sorted (0-based line, code)."""
    root = tmp_path / "materialized"
    sessions: dict[tuple[str, str], StoreSession] = {}
    for (project, sid, subpath), entries in keys.items():
        session = sessions.setdefault((project, sid), StoreSession(project, sid, []))
        if subpath:
            session.subkeys[subpath] = entries
        else:
            session.entries = entries
    for session in sessions.values():
        write_session(root, session, scratch=True)
    proc = subprocess.run(
        [sys.executable, "-m", "server.cli", "check", "--json", "--projects-dir", str(root), str(root)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    out: dict[str, list[tuple[int, str]]] = {}
    for d in json.loads(proc.stdout):
        out.setdefault(str(Path(d["path"]).relative_to(root)), []).append((d["line"] - 1, d["code"]))
    return {k: sorted(v) for k, v in out.items()}


def apart(coro: Any) -> Any:
    """Run a coroutine on a thread of its own (pytest-lsp asks for fixtures from inside its loop)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


@pytest.fixture
def store(pg_server: Any, pg_schema: str) -> dict[str, Any]:
    keys = corpus_keys()
    url = pg_server.url()
    apart(fill(url, pg_schema, keys))
    return {"url": url, "schema": pg_schema, "keys": keys}


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, projects: Path, store: dict[str, Any]):  # type: ignore[no-untyped-def]
    lsp_client.changes = []  # type: ignore[attr-defined]
    lsp_client.protocol.fm.features.pop("sessions/didChange", None)
    lsp_client.feature("sessions/didChange")(lambda ls, params: lsp_client.changes.append(params))  # type: ignore[attr-defined]
    await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            initialization_options={
                "projectsDir": str(projects),
                "watch": True,
                "stores": [{"url": store["url"], "schema": store["schema"]}],
            },
        )
    )
    await wait_for(lambda: lsp_client.changes)  # type: ignore[attr-defined]  # the first index is done
    yield
    await lsp_client.shutdown_session()


async def wait_for(cond, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    """Poll `cond` until it holds; `timeout` seconds is a hang detector."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await cond() if asyncio.iscoroutinefunction(cond) else cond():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not met in time")


def plain(value: Any) -> Any:
    """pytest-lsp hands custom results over as namedtuples: back to dicts and lists."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


async def request(client: LanguageClient, method: str, params: dict[str, Any]) -> Any:
    return plain(await client.protocol.send_request_async(method, params))


async def store_items(client: LanguageClient) -> dict[str, dict[str, Any]]:
    listed = await request(client, "sessions/list", {})
    return {s["sessionId"]: s for s in listed["sessions"] if s.get("storeId")}


async def test_store_sessions_are_listed_with_the_chain_read_locally(
    client: LanguageClient, projects: Path, store: dict[str, Any]
) -> None:
    listed = await request(client, "sessions/list", {})
    assert [(s["name"], s["error"]) for s in listed["stores"]] == [(f"{store['url']} ({store['schema']})", None)]
    items = {s["sessionId"]: s for s in listed["sessions"]}
    local = sorted(p.stem for p in (CORPUS / "projects").glob("*/*.jsonl"))
    assert sorted(items) == sorted([*local, DAMAGED])  # the local folder is empty: all come from the store
    assert all(s["readOnly"] and s["store"] == listed["stores"][0]["name"] for s in items.values())
    assert items[S2]["uri"] == f"session-store://{listed['stores'][0]['id']}/{SHOP}/{S2}.jsonl"
    (agent,) = items[S2]["subagents"]
    assert agent["agentId"] == "a88b3ce23b875db07"
    assert agent["uri"] == items[S2]["uri"].removesuffix(".jsonl") + "/subagents/agent-a88b3ce23b875db07.jsonl"
    for sid in local:
        (original,) = (CORPUS / "projects").glob(f"*/{sid}.jsonl")
        expected = resume(original, effort_statement=True).to_json()
        got = await request(client, "sessions/chain", {"sessionId": sid})
        assert (got["uuids"], got["leafUuid"], got["messages"]) == (
            expected["uuids"],
            expected["leafUuid"],
            expected["messages"],
        ), sid
    mirror = Path(items[S1]["path"]).parents[2]  # <cache>/store-mirrors/<pid>-*/<store id>/<project>/<id>.jsonl
    modes = {oct(p.stat().st_mode & 0o777) for p in [mirror, *mirror.rglob("*")] if not p.is_symlink()}
    assert modes == {"0o700", "0o600"}, modes
    print(f"{len(local)} store sessions give the chain of their local transcript")


async def test_hover_and_diagnostics_on_a_store_document(
    client: LanguageClient, store: dict[str, Any], tmp_path: Path
) -> None:
    items = await store_items(client)
    uri = items[DAMAGED]["uri"]
    served = await request(client, "sessions/storeDocument", {"uri": uri})
    assert served["readOnly"] is True
    assert served["text"].encode() == jsonl_bytes(store["keys"][(SHOP, DAMAGED, "")])
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="jsonl", version=1, text=served["text"])
        )
    )
    await wait_for(lambda: uri in client.diagnostics)
    pushed = sorted((d.range.start.line, str(d.code)) for d in client.diagnostics[uri])
    expected = checked_locally(store["keys"], tmp_path)
    assert pushed == expected[f"{SHOP}/{DAMAGED}.jsonl"]
    assert {code for _, code in pushed} == {"session-id-mismatch", "cross-file-parent", "unanswered-tool-use"}
    report = await client.workspace_diagnostic_async(lsp.WorkspaceDiagnosticParams(previous_result_ids=[]))
    prefix = uri[: uri.index(SHOP)]
    pulled = {
        i.uri.removeprefix(prefix): sorted((d.range.start.line, str(d.code)) for d in i.items) for i in report.items
    }
    assert pulled == expected  # every store document: what `check` says of the same files in a local folder
    row = store["keys"][(SHOP, DAMAGED, "")][5]
    hover = await client.text_document_hover_async(
        lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=5, character=3))
    )
    assert hover is not None and row["uuid"] in hover.contents.value
    lenses = await client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
    )
    assert {lens.command.command for lens in lenses} <= {"sessions/tree"}  # no fork or resume on a store session
    parent_line = next(
        i for i, e in enumerate(store["keys"][(SHOP, DAMAGED, "")]) if e.get("uuid") == row["parentUuid"]
    )
    found = await client.text_document_definition_async(
        lsp.DefinitionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            position=lsp.Position(line=5, character=served["text"].split("\n")[5].index(row["parentUuid"]) + 2),
        )
    )
    assert [(loc.uri, loc.range.start.line) for loc in found] == [(uri, parent_line)]


async def test_an_append_by_another_writer_arrives_as_did_change(client: LanguageClient, store: dict[str, Any]) -> None:
    chain = await request(client, "sessions/chain", {"sessionId": S1})
    before = len(chain["uuids"])
    client.changes.clear()  # type: ignore[attr-defined]
    leaf = next(e for e in store["keys"][(SHOP, S1, "")] if e.get("uuid") == chain["leafUuid"])
    row = {**leaf, "uuid": "99999999-9999-4999-8999-999999999999", "parentUuid": leaf["uuid"]}
    proc = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, str(WRITER), store["url"], store["schema"], "0", "2", "3", "6"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    await fill(store["url"], store["schema"], {(SHOP, S1, ""): [row]})

    def noticed() -> set[str]:
        return {sid for c in client.changes for sid in plain(c)["sessionIds"]}  # type: ignore[attr-defined]

    written = {f"00000000-0000-4000-8000-{n:012d}" for n in range(3)}
    await wait_for(lambda: written | {S1} <= noticed())
    after = await request(client, "sessions/chain", {"sessionId": S1})
    assert len(after["uuids"]) == before + 1 and after["leafUuid"] == row["uuid"]
    print(f"didChange named {len(noticed())} sessions; the chain of {S1} grew from {before} to {before + 1} rows")


async def test_writing_into_a_store_session_is_refused(client: LanguageClient, projects: Path) -> None:
    items = await store_items(client)
    asks = [
        ("sessions/fork", {"sessionId": S1}),
        ("sessions/fork", {"path": items[S1]["path"]}),
        ("sessions/runTurn", {"sessionId": S1, "prompt": "go on"}),
        ("sessions/runTurn", {"path": items[S1]["path"], "prompt": "go on"}),
    ]
    for method, params in asks:
        with pytest.raises(JsonRpcException) as caught:
            await client.protocol.send_request_async(method, params)
        assert "read-only" in caught.value.message and "pull" in caught.value.message, caught.value.message
        assert caught.value.data["reason"] == "store-read-only"
    assert list(projects.rglob("*")) == []  # nothing was written locally either
    assert len(await store_items(client)) == len(items)  # nor into the mirror


def test_a_bad_stores_option_is_refused() -> None:
    cases: list[tuple[Any, str]] = [
        ("postgresql://x/y", "must be a list"),
        (["mysql://root:secret@db/claude"], "must be a postgresql:// URL, not mysql://…"),
        ([5], "must be a postgresql:// URL, not 5"),
        ([{"url": "postgresql://db/c", "schema": "Drop Table"}], "schema must be a lower-case SQL name"),
        (["postgresql://a/b", "postgresql://a/b"], "names a store twice"),
    ]
    for stores, message in cases:
        with RawServer() as srv:
            answer = srv.call("initialize", {"capabilities": {}, "initializationOptions": {"stores": stores}})
        assert answer["error"]["code"] == -32602 and message in answer["error"]["message"], answer
        assert "secret" not in json.dumps(answer)
    proc = subprocess.run(
        [sys.executable, "-m", "server.cli", "serve", "--store", "mysql://root:secret@db/x"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "--store must be a postgresql:// URL" in proc.stderr and "secret" not in proc.stderr


async def test_a_session_deleted_from_the_store_leaves_the_index(client: LanguageClient, store: dict[str, Any]) -> None:
    items = await store_items(client)
    client.changes.clear()  # type: ignore[attr-defined]

    async def delete() -> None:
        async with PostgresSessionStore(store["url"], schema=store["schema"]) as writer:
            await writer.delete({"project_key": SHOP, "session_id": DAMAGED})

    await delete()
    gone = items[DAMAGED]["path"]
    await wait_for(lambda: any(gone in plain(c)["removed"] for c in client.changes))  # type: ignore[attr-defined]
    after = await store_items(client)
    assert sorted(after) == sorted(set(items) - {DAMAGED})
    with pytest.raises(JsonRpcException) as caught:
        await client.protocol.send_request_async("sessions/storeDocument", {"uri": items[DAMAGED]["uri"]})
    assert caught.value.data["reason"] == "not-found"


async def test_the_server_follows_the_store_through_a_database_restart(
    client: LanguageClient, store: dict[str, Any], pg_server: Any
) -> None:
    chain = await request(client, "sessions/chain", {"sessionId": S1})
    await asyncio.to_thread(pg_server.kill)

    async def noticed_down() -> bool:
        return (await request(client, "sessions/list", {}))["stores"][0]["error"] is not None

    await wait_for(noticed_down)
    down = (await request(client, "sessions/list", {}))["stores"][0]["error"]
    await asyncio.to_thread(pg_server.start)
    leaf = next(e for e in store["keys"][(SHOP, S1, "")] if e.get("uuid") == chain["leafUuid"])
    row = {**leaf, "uuid": "88888888-8888-4888-8888-888888888888", "parentUuid": leaf["uuid"]}
    await fill(store["url"], store["schema"], {(SHOP, S1, ""): [row]})

    async def caught_up() -> bool:
        return (await request(client, "sessions/chain", {"sessionId": S1}))["leafUuid"] == row["uuid"]

    await wait_for(caught_up)
    assert (await request(client, "sessions/list", {}))["stores"][0]["error"] is None
    print(f"while the database was down the store's error was {down!r}; after its restart the append arrived")


async def test_a_turn_in_the_store_appends_to_the_store_and_the_local_copy(
    client: LanguageClient, projects: Path, store: dict[str, Any], tmp_path: Path
) -> None:
    items = await store_items(client)
    store_id = items[S1]["storeId"]
    before = await request(client, "sessions/chain", {"sessionId": S1})
    work = tmp_path / "work"
    work.mkdir()
    client.changes.clear()  # type: ignore[attr-defined]
    params = {"sessionId": S1, "store": store_id, "prompt": "in the store", "cwd": str(work), "provider": "anthropic"}
    out = await request(client, "sessions/runTurn", params)
    assert out["pushed"] > 0 and out["projectKey"] == SHOP, out
    local = projects / SHOP / f"{S1}.jsonl"
    assert Path(out["path"]) == local and local.is_file()

    async def stored() -> list[Any]:
        async with PostgresSessionStore(store["url"], schema=store["schema"]) as reader:
            return list(await reader.load({"project_key": SHOP, "session_id": S1}))

    # the store now holds exactly the local copy's rows, the turn's reply last
    assert await stored() == entries_of(local)
    replies = [e for e in entries_of(local) if e.get("type") == "assistant"]
    assert replies[-1]["message"]["content"][0]["text"] == "echo: in the store"
    # the mirror follows through NOTIFY: the store session's chain ends with the turn's reply
    await wait_for(lambda: S1 in {sid for c in client.changes for sid in plain(c)["sessionIds"]})  # type: ignore[attr-defined]

    async def grown() -> bool:
        chain = await request(client, "sessions/chain", {"path": items[S1]["path"]})
        return bool(len(chain["uuids"]) == len(before["uuids"]) + 2)

    await wait_for(grown)
    # a second turn goes on from the store again, not only from the local copy
    again = await request(client, "sessions/runTurn", {**params, "prompt": "and again"})
    assert again["pushed"] > 0
    assert await stored() == entries_of(local)


async def test_a_turn_in_a_store_the_server_does_not_know_is_refused(client: LanguageClient, projects: Path) -> None:
    for params, field in (
        ({"sessionId": S1, "store": "0123456789ab", "prompt": "x"}, "store"),
        ({"path": "/x.jsonl", "store": "", "prompt": "x"}, "store"),
    ):
        with pytest.raises(JsonRpcException) as caught:
            await client.protocol.send_request_async("sessions/runTurn", params)
        assert caught.value.code == -32602 and field in caught.value.message, caught.value.message
    assert list(projects.rglob("*.jsonl")) == []


async def test_a_turn_in_the_store_cancelled_midway_leaves_store_and_copy_equal(
    client: LanguageClient, projects: Path, store: dict[str, Any], tmp_path: Path
) -> None:
    """Stopped in the middle of the model's reply: the turn records its interruption as the CLI does,
    and what it recorded still reaches the store, so the store and the local copy stay equal."""
    items = await store_items(client)
    work = tmp_path / "work"
    work.mkdir()
    params = {"sessionId": S1, "store": items[S1]["storeId"], "prompt": "SLOW stop me", "cwd": str(work)}
    msg_id = "store-turn-to-cancel"
    answer = client.protocol.send_request("sessions/runTurn", {**params, "provider": "anthropic"}, msg_id=msg_id)
    local = projects / SHOP / f"{S1}.jsonl"
    await wait_for(lambda: local.is_file() and "SLOW stop me" in local.read_text())
    client.protocol.notify("$/cancelRequest", lsp.CancelParams(id=msg_id))
    with pytest.raises(JsonRpcException):
        await asyncio.wrap_future(answer) if isinstance(answer, concurrent.futures.Future) else await answer

    async def equal() -> bool:
        async with PostgresSessionStore(store["url"], schema=store["schema"]) as reader:
            return bool(list(await reader.load({"project_key": SHOP, "session_id": S1})) == entries_of(local))

    await wait_for(equal)
    texts = [json.dumps(e) for e in entries_of(local)]
    assert any("[Request interrupted by user" in t for t in texts), texts[-3:]


async def test_workspace_symbols_find_store_sessions_and_their_messages(client: LanguageClient) -> None:
    items = await store_items(client)
    other = "1c99f271-c426-49f7-9ae1-2b8728ab22c4"  # 'named session', prompt 'hello from another project'
    uri = items[other]["uri"]
    assert uri.startswith("session-store://")
    by_title = await client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="named session"))
    assert by_title is not None
    assert [(s.name, s.kind, s.location.uri) for s in by_title] == [("named session", lsp.SymbolKind.File, uri)]
    hits = await client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="another project"))
    assert hits is not None
    sessions = [s for s in hits if s.kind == lsp.SymbolKind.File]
    messages = [s for s in hits if s.kind == lsp.SymbolKind.String]
    assert [s.location.uri for s in sessions] == [uri]
    assert messages and {s.location.uri for s in messages} == {uri}
    text = (await request(client, "sessions/storeDocument", {"uri": uri}))["text"].split("\n")
    assert all("another project" in text[s.location.range.start.line] for s in messages)
    print(f"{len(sessions)} store session and {len(messages)} of its messages found, lines "
          f"{sorted(s.location.range.start.line for s in messages)}")  # fmt: skip
