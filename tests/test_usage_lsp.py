"""Usage over the real language server (stdio): `sessions/list` carries each session's usage, and the
hover on an assistant row gives the tokens and cost of its API response, counted once for all its rows."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import pytest_lsp
from conftest import CORPUS
from lsprotocol import types as lsp
from lspserver import SERVER, open_session
from pytest_lsp import LanguageClient

from server.lsp.server import to_plain

SHOP = "-Users-me-shop"
PAR = "11111111-1111-4111-8111-111111111111"


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    dest = tmp_path / "projects"
    shutil.copytree(CORPUS / "projects", dest)
    return dest


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, projects: Path):  # type: ignore[no-untyped-def]
    await open_session(lsp_client, projects)
    yield
    await lsp_client.shutdown_session()


async def _hover(client: LanguageClient, path: Path, line: int) -> str:
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=path.as_uri(), language_id="jsonl", version=1, text=path.read_text())
        )
    )
    hover = await client.text_document_hover_async(
        lsp.HoverParams(
            text_document=lsp.TextDocumentIdentifier(uri=path.as_uri()), position=lsp.Position(line=line, character=3)
        )
    )
    assert hover is not None
    return hover.contents.value  # type: ignore[union-attr]


async def test_sessions_list_has_usage(client: LanguageClient, projects: Path) -> None:
    result = to_plain(await client.protocol.send_request_async("sessions/list", {}))
    by_id = {s["sessionId"]: s["usage"] for s in result["sessions"]}  # type: ignore[index]
    assert len(by_id) == 4
    assert by_id["22222222-2222-4222-8222-222222222222"] == {
        "inputTokens": 700,
        "outputTokens": 140,
        "cacheCreationTokens": 0,
        "cacheReadTokens": 0,
        "costUSD": 0.0056,
    }
    assert by_id[PAR]["costUSD"] == pytest.approx(0.0048)


async def test_hover_on_assistant_row_shows_its_response(client: LanguageClient, projects: Path) -> None:
    path = projects / SHOP / f"{PAR}.jsonl"
    lines = path.read_text().split("\n")
    ids: dict[str, list[int]] = {}
    for i, line in enumerate(lines):
        if '"type":"assistant"' in line:
            ids.setdefault(line.split('"id":"msg_', 1)[1].split('"', 1)[0], []).append(i)
    par_rows = next(rows for rows in ids.values() if len(rows) == 3)  # the parallel-call response
    text = await _hover(client, path, par_rows[1])
    assert "response: input 100, output 20, cache write 0, cache read 0 · $0.000800" in text
    assert "one API response stored as 3 rows: counted once" in text
    user_line = next(i for i, line in enumerate(lines) if '"type":"user"' in line)
    assert "response:" not in await _hover(client, path, user_line)
