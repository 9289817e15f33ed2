"""Full-text search (`storage.search`): the command line, its catching up with appends and rewrites,
and `workspace/symbol` over the real server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest_lsp
from lsprotocol import types as lsp
from lspserver import SERVER, open_session
from pytest_lsp import LanguageClient

S1 = "11111111-1111-4111-8111-111111111111"
SHOP = "-Users-me-shop"


def search(projects: Path, *words: str) -> list[dict]:
    out = subprocess.run(
        [sys.executable, "-m", "server.cli", "search", *words, "--projects-dir", str(projects), "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return json.loads(out.stdout)


def line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines()) if needle in line)


def test_search_finds_prompts_replies_tool_calls_and_results_at_their_line(corpus_projects: Path) -> None:
    path = corpus_projects / SHOP / f"{S1}.jsonl"
    hits = search(corpus_projects, "ORACLE", S1[:8])
    prompt = next(h for h in hits if h["kind"] == "prompt")
    assert prompt["sessionId"] == S1 and prompt["path"] == str(path.resolve())
    assert (
        prompt["line"] == line_of(path, f'"content":"ORACLE {S1}"')
        or f"ORACLE {S1}" in path.read_text().splitlines()[prompt["line"]]
    )
    assert any(h["kind"] == "reply" and "echo" in h["snippet"] for h in hits)
    tools = search(corpus_projects, "auth/login")
    assert {h["kind"] for h in tools} >= {"prompt", "tool"}
    # a subagent's rows are searched too, under their session
    sub = next(corpus_projects.glob("*/*/subagents/agent-*.jsonl"))
    assert any(h["path"] == str(sub.resolve()) for h in search(corpus_projects, "audit"))
    assert search(corpus_projects, "no-such-word-anywhere") == []


def test_search_catches_up_with_appends_rewrites_and_removals(corpus_projects: Path) -> None:
    path = corpus_projects / SHOP / f"{S1}.jsonl"
    assert search(corpus_projects, "zanzibarquux") == []
    row = {
        "parentUuid": None,
        "type": "user",
        "uuid": "aaaaaaaa-0000-4000-8000-000000000001",
        "sessionId": S1,
        "message": {"role": "user", "content": "where is zanzibarquux configured?"},
    }
    with open(path, "a") as fh:
        fh.write(json.dumps(row) + "\n")
    hits = search(corpus_projects, "zanzibarquux")
    assert [(h["kind"], h["line"], h["uuid"]) for h in hits] == [
        ("prompt", len(path.read_text().splitlines()) - 1, row["uuid"])
    ]
    lines = path.read_text().splitlines()[:-1]  # rewritten without the row, same inode
    with open(path, "r+") as fh:
        fh.truncate(0)
        fh.write("\n".join(lines) + "\n")
    os.utime(path, (1, 1))
    assert search(corpus_projects, "zanzibarquux") == []
    path.unlink()
    assert all(h["sessionId"] != S1 for h in search(corpus_projects, "ORACLE"))


def test_search_words_are_not_query_syntax(corpus_projects: Path) -> None:
    for odd in ('"', "AND", "NEAR(", "*", "a OR", "col:umn", "'; DROP TABLE docs; --"):
        out = subprocess.run(
            [sys.executable, "-m", "server.cli", "search", odd, "--projects-dir", str(corpus_projects), "--json"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, (odd, out.stderr)
        assert isinstance(json.loads(out.stdout), list)


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, corpus_projects: Path):  # type: ignore[no-untyped-def]
    await open_session(lsp_client, corpus_projects)
    yield
    await lsp_client.shutdown_session()


async def test_workspace_symbol_finds_messages_and_titles(client: LanguageClient, corpus_projects: Path) -> None:
    symbols = await client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="auth/login"))
    assert symbols
    path = (corpus_projects / SHOP / f"{S1}.jsonl").resolve()
    located = [s for s in symbols if s.location.uri == path.as_uri() and s.kind == lsp.SymbolKind.String]
    assert located and all(s.location.range.start.line > 0 for s in located)
    lines = path.read_text().splitlines()
    assert all("login" in lines[s.location.range.start.line] for s in located)
    titled = await client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="named session"))
    assert any(s.name == "named session" and s.kind == lsp.SymbolKind.File for s in titled)
