"""`sessions/conversation` gives the editors numbers where they draw numbers, whatever a transcript holds there.

A transcript is anyone's JSON (a session pulled from a shared store, a file a clone brought). The VS Code panel put a
hunk's `oldStart`/`oldLines`/`newStart`/`newLines` (`toolUseResult.structuredPatch`, passed through as recorded) into
its webview's HTML as they were, so a string there was markup: a forged `<details data-subagent=...>` or message that
posts what the panel's own elements post. Neovim formats them with `%d`, so a string or a null there made the whole
conversation buffer fail to draw; a compaction's `preTokens` with a `toLocaleString` key did that to the VS Code panel.
The real server over stdio, on a copy of the real-CLI corpus with those values changed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lspserver import SERVER, open_session
from pytest_lsp import LanguageClient

from server.lsp.server import to_plain

CORPORA = Path(__file__).resolve().parent / "corpus"
CONVO = "c0c0c0c0-0000-4000-8000-000000000001"
CONVO_DIR = "-tmp-slsp-convo-work"
AGENT_SESSION = "22222222-2222-4222-8222-222222222222"
MARKUP = '<img src=x onerror=alert(1)><details data-subagent="/home/me/.ssh/id_rsa">'


def _rewrite(path: Path, change: Any) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    path.write_text("".join(json.dumps(change(r)) + "\n" for r in rows))


def _odd_patch(row: dict[str, Any]) -> dict[str, Any]:
    result = row.get("toolUseResult")
    if isinstance(result, dict) and result.get("structuredPatch"):
        hunk = result["structuredPatch"][0]
        hunk.update(oldStart=MARKUP, oldLines=None, newStart=[1], newLines=True)
        result["structuredPatch"].append({"oldStart": 9, "lines": 5})  # not a list: no lines, not a failed request
    return row


def _odd_compaction(row: dict[str, Any]) -> dict[str, Any]:
    if row.get("subtype") == "compact_boundary":
        row["compactMetadata"] = {"trigger": {"x": 1}, "preTokens": {"toLocaleString": 1}}
    return row


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    dest = tmp_path / "projects"
    shutil.copytree(CORPORA / "convo" / "projects", dest)
    shutil.copytree(CORPORA / "claude-code-2.1.328" / "projects", dest, dirs_exist_ok=True)
    _rewrite(dest / CONVO_DIR / f"{CONVO}.jsonl", _odd_patch)
    _rewrite(next(dest.glob(f"*/{AGENT_SESSION}.jsonl")), _odd_compaction)
    return dest


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, projects: Path):  # type: ignore[no-untyped-def]
    await open_session(lsp_client, projects)
    yield
    await lsp_client.shutdown_session()


async def conversation(client: LanguageClient, **params: Any) -> dict[str, Any]:
    return to_plain(await client.protocol.send_request_async("sessions/conversation", params))  # type: ignore[no-any-return]


def is_count(value: object) -> bool:
    return type(value) is int and value >= 0


@pytest.mark.asyncio
async def test_a_hunks_numbers_are_counts_whatever_the_transcript_holds(client: LanguageClient) -> None:
    items = (await conversation(client, sessionId=CONVO))["items"]
    hunks = [h for i in items if i["kind"] == "tool" and "diff" in i for h in i["diff"]["hunks"]]
    assert hunks, "the corpus session has edits"
    for h in hunks:
        assert all(is_count(h[k]) for k in ("oldStart", "oldLines", "newStart", "newLines")), h
    # the hunk changed is still shown, its lines as recorded
    assert [" one", "-two", "+TWO", "+three", " four"] in [h["lines"] for h in hunks]


@pytest.mark.asyncio
async def test_a_compactions_trigger_and_pre_tokens_are_text_and_a_count_or_none(client: LanguageClient) -> None:
    items = (await conversation(client, sessionId=AGENT_SESSION))["items"]
    compaction = next(i for i in items if i["kind"] == "compaction")
    assert compaction["trigger"] is None or isinstance(compaction["trigger"], str)
    assert compaction["preTokens"] is None or is_count(compaction["preTokens"])
