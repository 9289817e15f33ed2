"""`initialize` answered before the server loads, from pygls's answer to the same request at an earlier launch;
over a raw stdio pipe to the real server. The stored answer is marked, so an answer carrying the mark came from
the store; pygls still handles the request (the session works), and its own answer replaces the stored one."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from rawlsp import LIVENESS, RawServer

INVALID_PARAMS = -32602
CAPABILITIES = {"window": {"workDoneProgress": True}, "general": {"positionEncodings": ["utf-16"]}}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("SESSION_LSP_NO_CACHE", raising=False)
    return tmp_path / "cache" / "session-lsp" / "initialize-v1.json"


def initialize(server: RawServer, projects: Path, capabilities: dict[str, Any], **options: Any) -> dict[str, Any]:
    params = {
        "processId": os.getpid(),
        "capabilities": capabilities,
        "initializationOptions": {"projectsDir": str(projects), "watch": False, **options},
    }
    return server.call("initialize", params)


def session(projects: Path, capabilities: dict[str, Any] = CAPABILITIES, **options: Any) -> dict[str, Any]:
    """One launch: initialize, then a request that needs the projects folder, then shutdown and exit."""
    with RawServer() as server:
        reply = initialize(server, projects, capabilities, **options)
        if "result" in reply:
            server.notify("initialized", {})
            listed = server.call("sessions/list", {})
            assert len(listed["result"]["sessions"]) == 4, listed
        assert server.call("shutdown")["result"] is None
        server.notify("exit")
        rc, _ = server.wait_exit(LIVENESS)
        assert rc == 0, server.stderr[-2000:]
        return reply


def mark_stored(cache: Path) -> str:
    """Mark every stored answer (its serverInfo name); returns the name pygls gives."""
    entries = json.loads(cache.read_bytes())
    name = next(iter(entries.values()))["result"]["serverInfo"]["name"]
    for entry in entries.values():
        entry["result"]["serverInfo"]["name"] = "stored-answer"
    cache.write_text(json.dumps(entries))
    return str(name)


def test_a_known_initialize_is_answered_from_the_store(corpus_projects: Path, cache: Path) -> None:
    first = session(corpus_projects)
    stored = json.loads(cache.read_bytes())
    assert [e["result"] for e in stored.values()] == [first["result"]]
    name = mark_stored(cache)
    assert name == "session-lsp"

    again = session(corpus_projects)  # another processId, the same request otherwise
    assert again["result"]["serverInfo"]["name"] == "stored-answer"
    assert {**again["result"], "serverInfo": first["result"]["serverInfo"]} == first["result"]
    assert [e["result"] for e in json.loads(cache.read_bytes()).values()] == [first["result"]]  # pygls's again


def test_other_capabilities_are_answered_by_the_server(corpus_projects: Path, cache: Path) -> None:
    session(corpus_projects)
    mark_stored(cache)
    other = session(corpus_projects, {"window": {"workDoneProgress": False}})
    assert other["result"]["serverInfo"]["name"] == "session-lsp"
    assert len(json.loads(cache.read_bytes())) == 2


def test_bad_options_get_the_servers_error_even_when_an_answer_is_stored(corpus_projects: Path, cache: Path) -> None:
    session(corpus_projects)
    mark_stored(cache)
    refused = session(corpus_projects, polling="yes")
    assert refused["error"]["code"] == INVALID_PARAMS and "polling" in refused["error"]["message"], refused


def test_a_bad_first_frame_still_ends_the_server(corpus_projects: Path, cache: Path) -> None:
    with RawServer() as server:
        server.write(b"Content-Length: twelve\r\n\r\n{}")
        rc, _ = server.wait_exit(LIVENESS)
        assert rc is not None and rc != 0
        assert b"bad frame" in server.stderr, server.stderr[-2000:]


def test_caching_off_answers_from_the_server(
    corpus_projects: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SESSION_LSP_NO_CACHE", "1")
    assert session(corpus_projects)["result"]["serverInfo"]["name"] == "session-lsp"
    assert not cache.exists()
