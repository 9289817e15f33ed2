"""An `initialize` no launch has answered before (an empty cache folder) is answered before pygls loads, from the
capabilities pygls builds for this server (`server.lsp.firstanswer`, `server/lsp/capabilities.json`). pygls still
answers it; its answer, withheld and kept for the next launch, must be the one the client got, for the
capabilities of real editors (pytest-lsp's recorded clients) and for every position encoding choice."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from rawlsp import LIVENESS, RawServer

from server.lsp.firstanswer import first_answer

RECORDED = sorted((Path(pytest_lsp.__file__).parent / "clients").glob("*.json"))
ENCODINGS: dict[str, dict[str, Any]] = {
    "no-capabilities": {},
    "utf-8-first": {"general": {"positionEncodings": ["utf-8", "utf-16"]}},
    "utf-32-only": {"general": {"positionEncodings": ["utf-32"]}},
    "unknown-encoding": {"general": {"positionEncodings": ["utf-7"]}},
    "notebooks": {"notebookDocument": {"synchronization": {"dynamicRegistration": True}}},
}
CASES = {
    **{p.stem: json.loads(p.read_text()) for p in RECORDED},
    **{k: {"capabilities": v} for k, v in ENCODINGS.items()},
}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("SESSION_LSP_NO_CACHE", raising=False)
    return tmp_path / "cache" / "session-lsp" / "initialize-v1.json"


def launch(projects: Path, client: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """initialize as `client`, list, shut down: the reply to `initialize` and the server's stderr."""
    params = {
        **client,
        "processId": os.getpid(),
        "rootUri": None,
        "initializationOptions": {"projectsDir": str(projects), "watch": False},
    }
    with RawServer("-v") as server:
        reply = server.call("initialize", params)
        if "result" in reply:
            server.notify("initialized", {})
            assert len(server.call("sessions/list", {})["result"]["sessions"]) == 4
            assert server.call("shutdown")["result"] is None
        server.notify("exit")
        rc, _ = server.wait_exit(LIVENESS)
        assert rc is not None, server.stderr[-2000:]
        return reply, server.stderr


def test_recorded_clients_cover_the_editors() -> None:
    assert {p.stem.split("_v")[0] for p in RECORDED} >= {"neovim", "visual_studio_code"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_first_initialize_gets_the_answer_pygls_gives(name: str, corpus_projects: Path, cache: Path) -> None:
    client = CASES[name]
    reply, stderr = launch(corpus_projects, client)
    expected = first_answer({**client, "rootUri": None})
    assert expected is not None
    assert reply["result"] == expected
    kept = [entry["result"] for entry in json.loads(cache.read_bytes()).values()]
    assert kept == [reply["result"]]  # pygls's own answer, withheld and kept
    assert b"differed" not in stderr, stderr[-2000:]
    early = stderr.index(b"initialize answered before the server loaded, from this server's capabilities")
    assert early < stderr.index(b"Language server initialized"), stderr[-2000:]  # pygls's own log of it


@pytest.mark.parametrize(
    "params",
    [
        {"capabilities": "all"},
        {"capabilities": {"general": {"positionEncodings": "utf-8"}}},
        {"capabilities": {"general": {"positionEncodings": [8]}}},
        {"capabilities": {"textDocument": []}},
        {"capabilities": {}, "workspaceFolders": "/tmp"},
        {"capabilities": {}, "workspaceFolders": [{"uri": "file:///tmp"}]},
        {"capabilities": {}, "rootUri": 7},
        {"capabilities": {}, "clientInfo": "vim"},
        {"capabilities": {}, "trace": "loud"},
        {"capabilities": {}, "trace": 1},
    ],
)
def test_a_shape_pygls_may_refuse_is_not_answered_early(params: dict[str, Any]) -> None:
    assert first_answer(params) is None


@pytest.mark.parametrize("refused", [{"workspaceFolders": "/tmp"}, {"trace": "loud"}])
def test_a_refused_first_initialize_is_pyglss_error_alone(
    refused: dict[str, Any], corpus_projects: Path, cache: Path
) -> None:
    reply, stderr = launch(corpus_projects, {"capabilities": {}, **refused})
    assert "error" in reply and "result" not in reply, reply
    assert b"answered early" not in stderr and b"before the server loaded" not in stderr, stderr[-2000:]
