"""An `initialize` no launch has answered before (an empty cache folder) is answered before pygls loads, from the
capabilities pygls builds for this server (`server.lsp.firstanswer`, `server/lsp/capabilities.json`). pygls still
answers it; its answer, withheld and kept for the next launch, must be the one the client got, for the
capabilities of real editors (pytest-lsp's recorded clients) and for every position encoding choice."""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib.util
import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from rawlsp import LIVENESS, RawServer

from server.lsp.firstanswer import first_answer
from server.lsp.paramshape import SCHEMA

REPO = Path(__file__).resolve().parent.parent

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
        {"capabilities": {"textDocument": ["hover"]}},
        {"capabilities": {}, "workspaceFolders": "/tmp"},
        {"capabilities": {}, "workspaceFolders": [{"uri": "file:///tmp"}]},
        {"capabilities": {}, "rootUri": 7},
        {"capabilities": {}, "clientInfo": "vim"},
        {"capabilities": {}, "trace": "loud"},
        {"capabilities": {}, "trace": 1},
        {"capabilities": {"textDocument": {"hover": 5}}},
        {"capabilities": {"textDocument": {"hover": {"contentFormat": ["html"]}}}},
        {"capabilities": {"workspace": {"symbol": {"symbolKind": {"valueSet": [1, 999]}}}}},
        {"capabilities": {"textDocument": {"semanticTokens": {"requests": {}}}}},
        {"capabilities": {"textDocument": {"synchronization": {"willSave": 1}}}},
    ],
)
def test_a_shape_pygls_may_refuse_is_not_answered_early(params: dict[str, Any]) -> None:
    assert first_answer(params) is None


REFUSED = {
    "folders-text": {"capabilities": {}, "workspaceFolders": "/tmp"},
    "trace-loud": {"capabilities": {}, "trace": "loud"},
    "hover-html": {"capabilities": {"textDocument": {"hover": {"contentFormat": ["html"]}}}},
    "symbol-kind-999": {"capabilities": {"workspace": {"symbol": {"symbolKind": {"valueSet": [1, 999]}}}}},
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_refused_first_initialize_is_pyglss_error_alone(name: str, corpus_projects: Path, cache: Path) -> None:
    reply, stderr = launch(corpus_projects, REFUSED[name])
    assert "error" in reply and "result" not in reply, reply
    assert b"answered early" not in stderr and b"before the server loaded" not in stderr, stderr[-2000:]


def pygls_answer(params: dict[str, Any]) -> dict[str, Any] | None:
    """What pygls answers these params with, as `LanguageServerProtocol.lsp_initialize` builds it (None: refused)."""
    from lsprotocol import types as lsp
    from pygls.capabilities import ServerCapabilitiesBuilder

    from server.lsp.server import server

    protocol, features = server.protocol, server.protocol.fm
    try:
        structured = protocol._converter.structure(params, lsp.InitializeParams)
    except Exception:  # cattrs raises its own validation errors, and ValueError, TypeError, KeyError
        return None
    client = structured.capabilities
    built = ServerCapabilitiesBuilder(
        client,
        set({**features.features, **features.builtin_features}.keys()),
        features.feature_options,
        list(features.commands.keys()),
        server._text_document_sync_kind,
        server._notebook_document_sync,
        ServerCapabilitiesBuilder.choose_position_encoding(client),
    ).build()
    answer: dict[str, Any] = protocol._converter.unstructure(
        lsp.InitializeResult(capabilities=built, server_info=protocol.server_info)
    )
    return answer


ODD_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    2**31,
    3.5,
    "",
    "x",
    "markdown",
    "utf-8",
    [],
    [1],
    ["x"],
    {},
    {"a": 1},
]


def _places(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        found.append((*path, k))
        found.extend(_places(v, (*path, k)))
    return found


def test_odd_capabilities_answered_early_are_pyglss_answer() -> None:
    """A real editor's params with one to three values replaced by odd ones, 1500 times: whenever the early
    answer is given, pygls takes the params and answers the same."""
    rng = random.Random(7)
    early = 0
    for _ in range(1500):
        params = {"processId": None, "rootUri": None, **copy.deepcopy(rng.choice([CASES[p.stem] for p in RECORDED]))}
        places = _places(params)
        for _ in range(rng.randint(1, 3)):
            place = rng.choice(places)
            with contextlib.suppress(KeyError, IndexError, TypeError):
                parent = functools.reduce(lambda o, k: o[k], place[:-1], params)
                parent[place[-1]] = rng.choice(ODD_VALUES)
        answer = first_answer(copy.deepcopy(params))
        if answer is None:
            continue
        early += 1
        expected = pygls_answer(copy.deepcopy(params))
        assert expected is not None, params  # refused by pygls, yet answered early
        expected["serverInfo"]["version"] = answer["serverInfo"]["version"]
        assert answer == expected, params
    assert early >= 50  # the check still lets odd but legal params through


def test_the_params_description_is_lsprotocols() -> None:
    """`server/lsp/requestparams.json` is what `scripts/make_capabilities.py` writes for the installed lsprotocol."""
    spec = importlib.util.spec_from_file_location("make_capabilities", REPO / "scripts" / "make_capabilities.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert json.loads(SCHEMA.read_bytes()) == module.request_params_schema()
