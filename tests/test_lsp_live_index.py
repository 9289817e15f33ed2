"""The real server over stdio keeps its index live whatever the disk does: a projects folder that
is missing at start, a symlink loop in the first scan, files rewritten while hovered, documents
synced on open and close only, and a fork copy that finds its source's subagent."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import threading
from pathlib import Path

import pytest
import pytest_lsp
from conftest import CORPUS
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

SHOP = "-Users-me-shop"
S1 = "11111111-1111-4111-8111-111111111111"
DAMAGED = "33333333-3333-4333-8333-333333333333"


def _corpus(dest: Path) -> Path:
    shutil.copytree(CORPUS / "projects", dest)
    lines = (dest / SHOP / f"{S1}.jsonl").read_bytes().split(b"\n")
    lines.insert(20, b"{garbage")
    (dest / SHOP / f"{DAMAGED}.jsonl").write_bytes(b"\n".join(lines))
    return dest


@pytest.fixture
def projects(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    layout = getattr(request, "param", "corpus")
    dest = tmp_path / "config" / "projects"
    if layout == "missing":
        return dest  # neither it nor its parent exists yet
    if layout == "fork":
        from test_diagnostics_links import real_fork_of_s2

        return real_fork_of_s2(tmp_path)[0]
    _corpus(dest)
    if layout == "loop":  # sorts first: the first scan meets it before anything else
        os.symlink(
            "00000000-0000-4000-8000-000000000000.jsonl", dest / SHOP / "00000000-0000-4000-8000-000000000000.jsonl"
        )
        os.symlink("a", dest / "-A-loop")
    return dest


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "server.cli", "serve", "--stdio"]))
async def client(lsp_client: LanguageClient, projects: Path):  # type: ignore[no-untyped-def]
    lsp_client.changes = []  # type: ignore[attr-defined]
    lsp_client.protocol.fm.features.pop("sessions/didChange", None)
    lsp_client.feature("sessions/didChange")(lambda ls, params: lsp_client.changes.append(params))  # type: ignore[attr-defined]
    lsp_client.init_result = await lsp_client.initialize_session(  # type: ignore[attr-defined]
        lsp.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            initialization_options={"projectsDir": str(projects), "watch": True},
        )
    )
    yield
    await lsp_client.shutdown_session()


async def wait_for(cond, timeout: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(timeout / 0.1)):
        if await cond() if asyncio.iscoroutinefunction(cond) else cond():
            return
        await asyncio.sleep(0.1)
    raise AssertionError("condition not met in time")


async def pulled(client: LanguageClient) -> dict[str, list[tuple[int, str]]]:
    report = await client.workspace_diagnostic_async(lsp.WorkspaceDiagnosticParams(previous_result_ids=[]))
    return {item.uri: [(d.range.start.line, str(d.code)) for d in item.items] for item in report.items}


async def test_documents_sync_on_open_and_close_only(client: LanguageClient, projects: Path) -> None:
    sync = client.init_result.capabilities.text_document_sync  # type: ignore[attr-defined]
    assert sync.change == lsp.TextDocumentSyncKind.None_ and sync.open_close is True
    path = projects / SHOP / f"{S1}.jsonl"
    uri = path.as_uri()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="jsonl", version=1, text=path.read_text())
        )
    )
    await wait_for(lambda: client.changes)  # type: ignore[attr-defined]
    hover = await client.text_document_hover_async(
        lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=5, character=3))
    )
    assert hover is not None and "line 6" in hover.contents.value  # read from disk, not from the editor


@pytest.mark.parametrize("projects", ["missing"], indirect=True)
async def test_projects_folder_made_after_the_server_started(client: LanguageClient, projects: Path) -> None:
    await wait_for(lambda: client.changes)  # type: ignore[attr-defined]  # the (empty) first scan is over
    assert await pulled(client) == {}
    _corpus(projects)
    damaged = (projects / SHOP / f"{DAMAGED}.jsonl").as_uri()

    async def indexed() -> bool:
        return (await pulled(client)).get(damaged) == [(0, "session-id-mismatch"), (20, "invalid-json")]

    await wait_for(indexed)
    listed = await client.protocol.send_request_async("sessions/list", {})
    assert len(listed.sessions) == 5
    shutil.rmtree(projects)
    await wait_for(lambda: any(getattr(c, "removed", None) for c in client.changes))  # type: ignore[attr-defined]
    _corpus(projects)
    await wait_for(indexed)


@pytest.mark.parametrize("projects", ["loop"], indirect=True)
async def test_first_scan_survives_a_symlink_loop(client: LanguageClient, projects: Path) -> None:
    damaged = (projects / SHOP / f"{DAMAGED}.jsonl").as_uri()

    async def indexed() -> bool:
        return (await pulled(client)).get(damaged) == [(0, "session-id-mismatch"), (20, "invalid-json")]

    await wait_for(indexed)
    path = projects / SHOP / f"{S1}.jsonl"
    with open(path, "ab") as fh:  # and the watcher is alive
        fh.write(b"{broken\n")

    async def appended() -> bool:
        return (await pulled(client)).get(path.as_uri()) == [(57, "invalid-json")]

    await wait_for(appended)


async def test_hover_while_the_file_is_rewritten(client: LanguageClient, projects: Path) -> None:
    """Rewrites in place (same inode) of other sizes, while hovering every line: no hover fails,
    and afterwards the file's diagnostics are those of the file as it is."""
    path = projects / SHOP / f"{S1}.jsonl"
    uri = path.as_uri()
    original = path.read_bytes()
    lines = original.split(b"\n")
    versions = [
        b"\n".join(lines[:10] + [b"{garbage"] + lines[10:]),
        b"\n".join(lines[:30]) + b"\n",
        b"\n".join([lines[0], *lines[5:]]),
        original,
    ]
    await wait_for(lambda: client.changes)  # type: ignore[attr-defined]
    stop = threading.Event()

    def churn() -> None:
        i = 0
        while not stop.is_set():
            with open(path, "r+b") as fh:
                fh.truncate(0)
                fh.write(versions[i % len(versions)])
            i += 1
            stop.wait(0.003)

    writer = threading.Thread(target=churn)
    writer.start()
    failures: list[str] = []
    hovers = 0
    try:
        for round_ in range(6):
            for line in range(0, 56, 2):
                try:
                    await client.text_document_hover_async(
                        lsp.HoverParams(
                            text_document=lsp.TextDocumentIdentifier(uri=uri),
                            position=lsp.Position(line=line, character=round_),
                        )
                    )
                except JsonRpcException as exc:
                    failures.append(str(exc))
                hovers += 1
    finally:
        stop.set()
        writer.join()
    assert hovers == 168 and failures == []
    with open(path, "r+b") as fh:
        fh.truncate(0)
        fh.write(versions[0])

    async def settled() -> bool:
        return (await pulled(client)).get(uri) == [(10, "invalid-json")]

    await wait_for(settled)


@pytest.mark.parametrize("projects", ["fork"], indirect=True)
async def test_fork_copy_finds_its_sources_subagent(client: LanguageClient, projects: Path) -> None:
    from test_diagnostics_links import AGENT, S2

    folder = next(projects.iterdir())
    (fork,) = [p for p in folder.glob("*.jsonl") if p.stem not in (S2, "11111111-1111-4111-8111-111111111111")
               and AGENT.encode() in p.read_bytes()]  # fmt: skip
    uri = fork.as_uri()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="jsonl", version=1, text=fork.read_text())
        )
    )
    await wait_for(lambda: uri in client.diagnostics)
    assert [d.code for d in client.diagnostics[uri] if d.severity <= lsp.DiagnosticSeverity.Warning] == []
    line_no, text = next((i, t) for i, t in enumerate(fork.read_text().split("\n")) if f'"agentId":"{AGENT}"' in t)
    col = text.index(f'"agentId":"{AGENT}"') + len('"agentId":"') + 2
    found = await client.text_document_definition_async(
        lsp.DefinitionParams(text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line_no, col))
    )
    assert [loc.uri for loc in found] == [(folder / S2 / "subagents" / f"agent-{AGENT}.jsonl").as_uri()]
