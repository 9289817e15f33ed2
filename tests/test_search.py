"""Full-text search (`storage.search`): the command line, its catching up with appends and rewrites,
and `workspace/symbol` over the real server."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest_lsp
from lsprotocol import types as lsp
from lspserver import SERVER, open_session
from pytest_lsp import LanguageClient

from storage.search import SearchIndex

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


def _append_prompt(path: Path, uuid: str, text: str) -> None:
    row = {"parentUuid": None, "type": "user", "uuid": uuid, "sessionId": path.stem}
    row["message"] = {"role": "user", "content": text}
    with open(path, "a") as fh:
        fh.write(json.dumps(row) + "\n")


def test_update_paths_reads_only_the_files_named(corpus_projects: Path, tmp_path: Path) -> None:
    s1 = corpus_projects / SHOP / f"{S1}.jsonl"
    other = next(p for p in corpus_projects.glob("*/*.jsonl") if p.stem != S1)
    sub = next(corpus_projects.glob("*/*/subagents/agent-*.jsonl"))
    index = SearchIndex.open(tmp_path / "cache")
    assert index.update(corpus_projects) >= 3
    _append_prompt(s1, "aaaaaaaa-0000-4000-8000-000000000001", "where is quokkafoo?")
    _append_prompt(other, "aaaaaaaa-0000-4000-8000-000000000002", "and quokkafoo here")
    _append_prompt(sub, "aaaaaaaa-0000-4000-8000-000000000003", "a subagent quokkafoo")
    # only the session file and the subagent file named are read; a path outside the folder is ignored
    assert index.update_paths(corpus_projects, [s1, sub, tmp_path / "elsewhere.jsonl"]) == 2
    found = index.search("quokkafoo", projects_dir=corpus_projects)
    assert sorted((Path(h.path).name, h.session_id) for h in found) == sorted(
        [(s1.name, S1), (sub.name, sub.parent.parent.name)]
    )
    # a file named that is gone is dropped
    s1.unlink()
    assert index.update_paths(corpus_projects, [s1]) == 0
    assert [Path(h.path).name for h in index.search("quokkafoo", projects_dir=corpus_projects)] == [sub.name]
    # the full catch-up still finds what no one named
    index.update(corpus_projects)
    assert {Path(h.path).name for h in index.search("quokkafoo", projects_dir=corpus_projects)} == {
        sub.name,
        other.name,
    }
    index.close()


@pytest_lsp.fixture(config=SERVER)
async def watching(lsp_client: LanguageClient, corpus_projects: Path):  # type: ignore[no-untyped-def]
    await open_session(lsp_client, corpus_projects, watch=True)
    yield
    await lsp_client.shutdown_session()


async def _messages(client: LanguageClient, query: str) -> list[lsp.SymbolInformation]:
    found = await client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query=query))
    return [s for s in found or [] if isinstance(s, lsp.SymbolInformation) and s.kind == lsp.SymbolKind.String]


async def _until(client: LanguageClient, query: str, want: int) -> list[lsp.SymbolInformation]:
    """workspace/symbol until it gives `want` messages (the watcher reports a change within a second)."""
    for _ in range(100):
        found = await _messages(client, query)
        if len(found) == want:
            return found
        await asyncio.sleep(0.1)
    return found


async def test_workspace_symbol_follows_what_the_watcher_sees(watching: LanguageClient, corpus_projects: Path) -> None:
    path = corpus_projects / SHOP / f"{S1}.jsonl"
    assert await _messages(watching, "quokkabar") == []
    _append_prompt(path, "aaaaaaaa-0000-4000-8000-000000000009", "is quokkabar set?")
    found = await _until(watching, "quokkabar", 1)
    assert [(s.location.uri, s.location.range.start.line) for s in found] == [
        (path.resolve().as_uri(), len(path.read_text().splitlines()) - 1)
    ]
    lines = path.read_text().splitlines()[:-1]  # rewritten without the row
    path.write_text("\n".join(lines) + "\n")
    assert await _until(watching, "quokkabar", 0) == []
    assert await _messages(watching, "auth/login")  # the rest is still found
