"""End-to-end: the real server over real stdio (pytest-lsp), as VS Code and Neovim talk to it."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

import pytest
import pytest_lsp
from conftest import CORPUS
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from server.lsp.server import to_plain

SHOP = "-Users-me-shop"
S1 = "11111111-1111-4111-8111-111111111111"
S2 = "22222222-2222-4222-8222-222222222222"


def _projects(tmp: Path) -> Path:
    dest = tmp / "config" / "projects"  # in a config home of its own, as the CLI lays it out
    shutil.copytree(CORPUS / "projects", dest)
    for p in dest.rglob("*"):
        p.chmod(0o700 if p.is_dir() else 0o600)
    # a damaged copy: a garbage line in the middle
    src = dest / SHOP / f"{S1}.jsonl"
    lines = src.read_bytes().split(b"\n")
    lines.insert(20, b"{garbage")
    (dest / SHOP / "33333333-3333-4333-8333-333333333333.jsonl").write_bytes(b"\n".join(lines))
    return dest


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    return _projects(tmp_path)


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "server.cli", "serve", "--stdio"]),
    params=["visual-studio-code", "neovim"],
)
async def client(lsp_client: LanguageClient, projects: Path, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    lsp_client.changes = []  # type: ignore[attr-defined]

    lsp_client.protocol.fm.features.pop("sessions/didChange", None)

    def _changed(ls: object, params: object) -> None:
        lsp_client.changes.append(params)  # type: ignore[attr-defined]

    lsp_client.feature("sessions/didChange")(_changed)
    await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=client_capabilities(request.param),
            initialization_options={"projectsDir": str(projects), "watch": True},
        )
    )
    yield
    await lsp_client.shutdown_session()


async def call(client: LanguageClient, method: str, params: object) -> object:
    """Send a request; pygls hands results back as namedtuples, so turn them into plain data."""
    return to_plain(await client.protocol.send_request_async(method, params))


def uri(p: Path) -> str:
    return p.as_uri()


async def _open(client: LanguageClient, path: Path) -> str:
    u = uri(path)
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=u, language_id="jsonl", version=1, text=path.read_text())
        )
    )
    return u


async def _wait_for(cond, timeout: float = 15.0) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(timeout / 0.1)):
        if cond():
            return
        await asyncio.sleep(0.1)
    raise AssertionError("condition not met in time")


def _line_of(path: Path, needle: str) -> int:
    for i, line in enumerate(path.read_text().split("\n")):
        if needle in line:
            return i
    raise AssertionError(needle)


async def test_sessions_list_and_chain(client: LanguageClient, projects: Path) -> None:
    result = await call(client, "sessions/list", {})
    ids = {s["sessionId"] for s in result["sessions"]}
    assert {S1, S2, "d864acd2-d28b-43ce-b430-2208a10860fe", "1c99f271-c426-49f7-9ae1-2b8728ab22c4"} <= ids
    chain = await call(client, "sessions/chain", {"sessionId": S1})
    assert chain["leafUuid"] == chain["uuids"][-1]
    assert chain["messages"][-1]["content"][0]["text"] == f"echo: ORACLE {S1}"
    tree = await call(client, "sessions/tree", {"sessionId": S2})
    assert tree["subagents"][0]["agentId"] == "a88b3ce23b875db07"
    assert any(n["onChain"] for n in tree["nodes"]) and any(not n["onChain"] for n in tree["nodes"])
    resumed = await call(client, "sessions/resume", {"sessionId": S2})
    assert resumed["sessionId"] == S2 and resumed["messages"]
    via_cmd = to_plain(
        await client.workspace_execute_command_async(
            lsp.ExecuteCommandParams(command="sessions/chain", arguments=[{"sessionId": S1}])
        )
    )
    assert via_cmd["uuids"] == chain["uuids"]


async def test_bad_requests_are_invalid_params(client: LanguageClient, projects: Path) -> None:
    for method, params in [
        ("sessions/chain", {"sessionId": "not-a-uuid"}),
        ("sessions/chain", {"sessionId": "99999999-9999-4999-8999-999999999999"}),
        ("sessions/chain", {"path": "/etc/passwd"}),
        ("sessions/tree", {}),
        ("sessions/list", {"projectsDir": "/nonexistent/folder"}),
        ("sessions/chain", {"sessionId": 42}),
    ]:
        with pytest.raises(JsonRpcInvalidParams):
            await call(client, method, params)
    # still serving
    result = await call(client, "sessions/list", {})
    assert result["sessions"]


async def test_damaged_file_diagnostic_and_hover(client: LanguageClient, projects: Path) -> None:
    damaged = projects / SHOP / "33333333-3333-4333-8333-333333333333.jsonl"
    u = await _open(client, damaged)
    await _wait_for(lambda: any(d.code == "invalid-json" for d in client.diagnostics.get(u, [])))
    bad = [d for d in client.diagnostics[u] if d.code == "invalid-json"]
    assert bad[0].range.start.line == 20
    assert bad[0].severity == lsp.DiagnosticSeverity.Error
    pulled = await client.text_document_diagnostic_async(
        lsp.DocumentDiagnosticParams(text_document=lsp.TextDocumentIdentifier(uri=u))
    )
    assert any(d.code == "invalid-json" and d.range.start.line == 20 for d in pulled.items)

    healthy = projects / SHOP / f"{S1}.jsonl"
    hu = await _open(client, healthy)
    line = _line_of(healthy, '"uuid":"f81ba22b')
    hover = await client.text_document_hover_async(
        lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(uri=hu), position=lsp.Position(line=line, character=5))
    )
    assert hover is not None
    text = hover.contents.value
    assert "assistant" in text and "f81ba22b-367c-4e1" in text and "on the resume chain" in text
    assert "toolu_05a710ac240f4f3fbdb3" in text


async def test_definition_and_references(client: LanguageClient, projects: Path) -> None:
    healthy = projects / SHOP / f"{S1}.jsonl"
    u = await _open(client, healthy)
    child_line = _line_of(healthy, '"uuid":"30f33bae')
    text = healthy.read_text().split("\n")[child_line]
    col = text.index('"parentUuid":"') + len('"parentUuid":"') + 3
    locs = await client.text_document_definition_async(
        lsp.DefinitionParams(
            text_document=lsp.TextDocumentIdentifier(uri=u), position=lsp.Position(line=child_line, character=col)
        )
    )
    assert locs and locs[0].range.start.line == _line_of(healthy, '"uuid":"f81ba22b')
    # tool_use_id goes to the tool call
    col = text.index('"tool_use_id":"') + len('"tool_use_id":"') + 2
    locs = await client.text_document_definition_async(
        lsp.DefinitionParams(
            text_document=lsp.TextDocumentIdentifier(uri=u), position=lsp.Position(line=child_line, character=col)
        )
    )
    assert locs and locs[0].range.start.line == _line_of(healthy, '"uuid":"f81ba22b')
    refs = await client.text_document_references_async(
        lsp.ReferenceParams(
            text_document=lsp.TextDocumentIdentifier(uri=u),
            position=lsp.Position(line=_line_of(healthy, '"uuid":"3774bf6d'), character=0),
            context=lsp.ReferenceContext(include_declaration=False),
        )
    )
    lines = {r.range.start.line for r in refs if r.uri == u}
    assert {_line_of(healthy, '"uuid":"f81ba22b'), _line_of(healthy, '"uuid":"1aaa446d')} <= lines


async def test_symbols_folding_lenses_workspace_symbols(client: LanguageClient, projects: Path) -> None:
    healthy = projects / SHOP / f"{S1}.jsonl"
    u = await _open(client, healthy)
    symbols = await client.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(text_document=lsp.TextDocumentIdentifier(uri=u))
    )
    names = [s.name for s in symbols]
    assert names[:2] == ["READ /Users/me/shop/src/auth/login.ts", "继续检查登录失败时是否写入审计日志"]
    par = symbols[2]
    assert [c.name for c in par.children] == [
        "Reading them all.",
        "Read call",
        "Read call",
        "tool result",
        "tool result",
        "I read it (2 tool results).",
    ]
    folds = await client.text_document_folding_range_async(
        lsp.FoldingRangeParams(text_document=lsp.TextDocumentIdentifier(uri=u))
    )
    assert len(folds) == len(symbols)
    lenses = await client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=u))
    )
    titles = [lens.command.title for lens in lenses]
    assert "Resume from here" in titles and titles.count("Fork here") == 4
    found = await client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="named"))
    assert [s.name for s in found] == ["named session"]


async def test_append_publishes_new_diagnostic(client: LanguageClient, projects: Path) -> None:
    path = projects / SHOP / f"{S2}.jsonl"
    await _wait_for(lambda: client.changes)  # the initial scan is over
    u = await _open(client, path)
    n = len(path.read_bytes().split(b"\n")) - 1
    with open(path, "ab") as fh:
        fh.write(
            b'{"parentUuid":"ffffffff-0000-4000-8000-000000000000","type":"user","uuid":"eeeeeeee-0000-4000-8000-000000000001","isSidechain":false,"message":{"role":"user","content":"x"},"sessionId":"'
            + S2.encode()
            + b'"}\n'
        )
    await _wait_for(
        lambda: any(d.code == "dangling-parent" and d.range.start.line == n for d in client.diagnostics.get(u, []))
    )
    await _wait_for(lambda: any(S2 in to_plain(c).get("sessionIds", []) for c in client.changes), timeout=5)


def test_fuzz_random_requests_server_stays_up(projects: Path) -> None:
    """A thousand random requests and notifications over raw stdio; the server answers each
    request (result or error) and then serves a real request."""
    import random
    import subprocess

    proc = subprocess.Popen(
        [sys.executable, "-m", "server.cli", "serve", "--stdio"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        bufsize=0,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(obj: dict) -> None:
        body = json.dumps(obj).encode()
        proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]

    def recv_until(msg_id: int, what: str = "") -> dict:
        import select

        while True:
            ready, _, _ = select.select([proc.stdout], [], [], 30)
            assert ready, f"no answer in 30 s to {what}"
            header = b""
            while not header.endswith(b"\r\n\r\n"):
                ch = proc.stdout.read(1)  # type: ignore[union-attr]
                assert ch, "server closed its output"
                header += ch
            length = int(header.split(b"Content-Length:")[1].split(b"\r\n")[0])
            body = b""
            while len(body) < length:
                body += proc.stdout.read(length - len(body))  # type: ignore[union-attr]
            msg = json.loads(body)
            if msg.get("id") == msg_id and "method" not in msg:
                return msg
            if "method" in msg and "id" in msg:  # a request from the server: answer it
                send({"jsonrpc": "2.0", "id": msg["id"], "result": None})

    try:
        send(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {"capabilities": {}, "initializationOptions": {"projectsDir": str(projects)}},
            }
        )
        assert "result" in recv_until(0)
        send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        rng = random.Random(7)
        methods = [
            "sessions/list",
            "sessions/tree",
            "sessions/chain",
            "sessions/resume",
            "sessions/fork",
            "sessions/runTurn",
            "textDocument/hover",
            "textDocument/definition",
            "textDocument/documentSymbol",
            "textDocument/codeLens",
            "workspace/executeCommand",
            "workspace/symbol",
            "sessions/nope",
        ]
        values = [
            None,
            1,
            "x",
            [],
            {},
            {"sessionId": "zz"},
            {"path": "../../etc/passwd"},
            {"textDocument": {"uri": 3}},
            {"sessionId": None},
            {"command": "sessions/chain", "arguments": [7]},
            [1, 2],
            {"projectsDir": 5},
            {"textDocument": {"uri": "file:///nowhere.jsonl"}, "position": {"line": -1, "character": "a"}},
            {"prompt": 5},
            {"sessionId": S1, "atUuid": "not-there"},
            True,
        ]
        answered = 0
        for i in range(1, 1001):
            method, params = rng.choice(methods), rng.choice(values)
            if i % 5 == 0:
                send(
                    {
                        "jsonrpc": "2.0",
                        "method": rng.choice(["sessions/x", "textDocument/didChange", "$/foo"]),
                        "params": params,
                    }
                )
                continue
            send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
            reply = recv_until(i, f"{method} {params!r}")
            assert "result" in reply or "error" in reply
            answered += 1
        assert answered == 800
        send({"jsonrpc": "2.0", "id": 5000, "method": "sessions/list", "params": {}})
        reply = recv_until(5000)
        assert len(reply["result"]["sessions"]) == 5
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


async def test_run_turn_streams_and_records(client: LanguageClient, projects: Path, tmp_path: Path) -> None:
    """sessions/runTurn with the scripted test model: a new session in the cwd's project folder,
    progress streamed, and the turn recorded as the CLI records it."""
    from storage.paths import project_folder_name
    from storage.resume import resume

    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("hello from notes\n")
    client.progress_reports.setdefault("turn-1", [])  # a client-made work-done token
    result = await call(
        client,
        "sessions/runTurn",
        {"prompt": f"READ {work / 'notes.txt'}", "cwd": str(work), "provider": "anthropic", "workDoneToken": "turn-1"},
    )
    assert result["text"].endswith("I read it (1 tool results).")
    path = Path(result["path"])
    assert path.parent == projects / project_folder_name(str(work.resolve()))
    messages = resume(path).messages
    convo = [m for m in messages if m["role"] != "system"]
    assert convo[-1] == {"role": "assistant", "content": [{"type": "text", "text": "I read it (1 tool results)."}]}
    results = [b for m in convo for b in m["content"] if b.get("type") == "tool_result"]
    assert len(results) == 1 and "hello from notes" in json.dumps(results[0])
    reports = [r for r in client.progress_reports.get("turn-1", []) if getattr(r, "kind", "") == "report"]
    assert any("I read it" in (r.message or "") for r in reports)
    # the session shows up in the list
    listed = await call(client, "sessions/list", {})
    assert result["sessionId"] in {s["sessionId"] for s in listed["sessions"]}


async def test_run_turn_cancelled_leaves_a_resumable_session(
    client: LanguageClient, projects: Path, tmp_path: Path
) -> None:
    from storage.resume import resume

    work = tmp_path / "work2"
    work.mkdir()
    first = await call(client, "sessions/runTurn", {"prompt": "hello", "cwd": str(work), "provider": "anthropic"})
    fut = asyncio.ensure_future(
        client.protocol.send_request_async(
            "sessions/runTurn",
            {"sessionId": first["sessionId"], "prompt": "SLOW a long reply", "provider": "anthropic"},
            msg_id="slow-turn",
        )
    )
    await asyncio.sleep(1.5)
    client.protocol.notify("$/cancelRequest", lsp.CancelParams(id="slow-turn"))
    with pytest.raises(JsonRpcException):  # answered as cancelled
        await asyncio.wait_for(fut, 30)
    path = Path(first["path"])
    text = path.read_text()
    assert "[Request interrupted by user]" in text
    r = resume(path)
    assert r.messages[-1]["role"] == "assistant"
    # and the next turn continues the same file
    again = await call(
        client, "sessions/runTurn", {"sessionId": first["sessionId"], "prompt": "after", "provider": "anthropic"}
    )
    assert again["path"] == first["path"] and again["text"] == "echo: after"
