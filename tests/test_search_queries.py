"""Whatever a person types into a search is words, never an error: a NUL, a lone surrogate (a JSON
escape over LSP, an undecodable byte on the command line) and FTS5 syntax are searched as text,
over the real server's `workspace/symbol` and the `search` command; a repeated word is asked once."""

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

from storage.search import fts_query


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, corpus_projects: Path):  # type: ignore[no-untyped-def]
    await open_session(lsp_client, corpus_projects)
    yield
    await lsp_client.shutdown_session()


async def _places(client: LanguageClient, query: str) -> list[tuple[str, int]]:
    found = await client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query=query))
    assert isinstance(found, list)
    return sorted((s.location.uri, s.location.range.start.line) for s in found if s.kind != lsp.SymbolKind.File)


async def test_workspace_symbol_searches_nul_and_lone_surrogates_as_text(client: LanguageClient) -> None:
    words = await _places(client, "auth login")
    assert len(words) >= 2
    assert await _places(client, "auth\x00login") == words  # a NUL separates words
    assert await _places(client, "\x00") == []
    assert await _places(client, "\ud800auth \udcfflogin") == words  # lone surrogates are not letters
    for odd in ("NEAR(auth login)", "auth)", '"auth', "(auth OR", "^auth", "- auth", "docs:auth", "auth NOT"):
        assert isinstance(await _places(client, odd), list), odd
    assert await _places(client, "auth login") == words  # the server still answers


def test_search_command_takes_an_undecodable_argument(corpus_projects: Path) -> None:
    def search(word: bytes) -> subprocess.CompletedProcess[bytes]:
        argv = [os.fsencode(sys.executable), b"-m", b"server.cli", b"search", word, b"--projects-dir"]
        return subprocess.run([*argv, os.fsencode(corpus_projects), b"--json"], capture_output=True, timeout=120)

    plain, odd = search(b"login"), search(b"\xfflogin")  # e.g. typed in a Latin-1 terminal
    assert plain.returncode == 0 and odd.returncode == 0, odd.stderr.decode(errors="replace")
    hits = json.loads(plain.stdout)
    assert hits and json.loads(odd.stdout) == hits


def test_a_repeated_word_is_asked_once() -> None:
    assert fts_query("auth " * 20000 + "login") == '"auth" "login"*'
    assert fts_query("login " * 20000) == '"login" "login"*'
    assert fts_query('a"b a"b') == '"a""b" "a""b"*'
