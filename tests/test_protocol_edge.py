"""The protocol edge, over a raw stdio pipe to the real server (not pytest-lsp, which only sends
well-formed frames): broken frames end the server instead of leaving it deaf, requests after
`shutdown` are refused, and wrong parameter types are InvalidParams naming the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rawlsp import LIVENESS, RawServer

S1 = "11111111-1111-4111-8111-111111111111"
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


def _files(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for p in sorted(root.rglob("*")) if p.is_file()}


def _frame(body: bytes, length: str | None) -> bytes:
    head = b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n"
    if length is not None:
        head = f"Content-Length: {length}\r\n".encode() + head
    return head + b"\r\n" + body


LIST_BODY = json.dumps({"jsonrpc": "2.0", "id": 77, "method": "sessions/list", "params": {}}).encode()
NEXT_REQUEST = _frame(
    json.dumps({"jsonrpc": "2.0", "id": 78, "method": "sessions/list", "params": {"cwd": "/" * 40}}).encode(),
    None,
)
BAD_FRAMES = {
    "too small": _frame(LIST_BODY, str(len(LIST_BODY) - 7)),
    # the server cannot tell a short body from a slow client until more bytes come: the next
    # frame's bytes then land inside this body
    "too large": _frame(LIST_BODY, str(len(LIST_BODY) + 40)) + _frame(LIST_BODY, str(len(LIST_BODY))),
    "beyond any sane size": _frame(LIST_BODY, "99999999999999"),
    "negative": _frame(LIST_BODY, "-5"),
    "not a number": _frame(LIST_BODY, "twelve"),
    "missing": _frame(LIST_BODY, None),
}


@pytest.mark.parametrize("kind", list(BAD_FRAMES))
def test_bad_frame_ends_the_server(kind: str, corpus_projects: Path) -> None:
    """After a good `initialize`, one bad frame and then a good request: the server must not sit
    there deaf; it logs the bad frame and exits non-zero within the liveness bound."""
    with RawServer() as server:
        server.initialize(corpus_projects, watch=False)
        assert "result" in server.call("sessions/list", {})
        server.write(BAD_FRAMES[kind])
        server.write(_frame(LIST_BODY.replace(b'"id": 77', b'"id": 79'), str(len(LIST_BODY))))
        rc, took = server.wait_exit(LIVENESS)
        print(f"bad frame {kind!r}: exit status {rc} after {took:.2f} s")
        assert rc is not None, f"a bad frame ({kind}) left the server running and deaf for {LIVENESS} s"
        assert rc != 0
        assert b"bad frame" in server.stderr, server.stderr[-2000:]
        assert 79 not in server.responses  # nothing after the bad frame was taken as a request


def test_requests_after_shutdown_are_invalid_request(corpus_projects: Path) -> None:
    with RawServer() as server:
        server.initialize(corpus_projects, watch=False)
        assert server.call("shutdown")["result"] is None
        for method, params in [
            ("sessions/list", {}),
            ("sessions/chain", {"sessionId": S1}),
            (
                "textDocument/hover",
                {"textDocument": {"uri": "file:///x.jsonl"}, "position": {"line": 0, "character": 0}},
            ),
        ]:
            reply = server.call(method, params, timeout=LIVENESS)
            assert "result" not in reply, f"{method} was served after shutdown: {str(reply)[:200]}"
            assert reply["error"]["code"] == INVALID_REQUEST, reply
        server.notify("exit")
        rc, took = server.wait_exit(LIVENESS)
        print(f"exit after shutdown: status {rc} after {took:.2f} s")
        assert rc == 0


BAD_TEXT = [5, True, 1.5, [], {}, ["x"], "", "a\u0000b"]
"""Wrong values for a string field: other JSON types, empty, a NUL character."""
BAD_BOOL = [5, "yes", "true", [], {}, 0]
FIELDS: dict[str, tuple[dict[str, Any], dict[str, list[Any]]]] = {
    # method: (valid parameters the wrong field is added to, {field: wrong values})
    "sessions/list": ({}, {"projectsDir": BAD_TEXT, "cwd": BAD_TEXT}),
    "sessions/tree": ({}, {"sessionId": BAD_TEXT, "path": BAD_TEXT}),
    "sessions/chain": ({"sessionId": S1}, {"sessionId": BAD_TEXT, "bare": BAD_BOOL}),
    "sessions/resume": ({"sessionId": S1}, {"sessionId": BAD_TEXT, "bare": BAD_BOOL}),
    "sessions/fork": ({"sessionId": S1}, {"sessionId": BAD_TEXT, "atUuid": BAD_TEXT, "title": BAD_TEXT}),
    "sessions/runTurn": (
        {"prompt": "hello", "provider": "anthropic"},
        {
            "prompt": BAD_TEXT + ["   "],
            "sessionId": BAD_TEXT,
            "path": BAD_TEXT,
            "cwd": BAD_TEXT,
            "mode": BAD_TEXT + ["sideways"],
            "provider": BAD_TEXT,
            "model": BAD_TEXT,
            "tools": [5, "Bash", [5], ["Nope"], {}, [None]],
            "maxSteps": ["5", 0, 501, True, 1.5, [], {}],
            "projectsDir": BAD_TEXT,
            "workDoneToken": [{}, [], True, 1.5, {"a": 1}],
        },
    ),
}
CASES = [
    (method, field, value)
    for method, (_base, fields) in FIELDS.items()
    for field, values in fields.items()
    for value in values
]


def test_wrong_parameter_types_are_invalid_params(corpus_projects: Path, tmp_path: Path) -> None:
    """Every field of every `sessions/*` request with wrong values: each answer is InvalidParams
    (-32602) whose message names the field, never InternalError; nothing is written; and the
    server keeps serving throughout (also as `workspace/executeCommand`)."""
    work = tmp_path / "work"
    work.mkdir()
    before = _files(corpus_projects)
    failures: list[str] = []
    with RawServer() as server:
        server.initialize(corpus_projects, watch=False)
        sent = 0
        for method, field, value in CASES:
            base = FIELDS[method][0]
            params = {**base, field: value}
            if method == "sessions/runTurn" and field != "cwd":
                params["cwd"] = str(work)
            if method == "sessions/tree" and field == "path":
                params.pop("sessionId", None)
            for via_command in (False, True):
                if via_command:
                    reply = server.call("workspace/executeCommand", {"command": method, "arguments": [params]})
                else:
                    reply = server.call(method, params)
                sent += 1
                err = reply.get("error")
                where = f"{'executeCommand ' if via_command else ''}{method} {field}={value!r}"
                if err is None:
                    failures.append(f"{where}: served ({str(reply.get('result'))[:80]})")
                elif err["code"] != INVALID_PARAMS:
                    failures.append(f"{where}: code {err['code']} {err['message'][:120]!r}")
                elif field not in err["message"]:
                    failures.append(f"{where}: message does not name the field: {err['message'][:120]!r}")
        # the two the issue names, and parameters that are not an object at all
        for method, params, field in [
            ("sessions/list", {"cwd": "\u0000"}, "cwd"),
            ("sessions/runTurn", {"prompt": "hi", "model": 5, "cwd": str(work)}, "model"),
            ("sessions/runTurn", {"prompt": "hi", "workDoneToken": {}, "cwd": str(work)}, "workDoneToken"),
            ("sessions/list", 5, "parameters"),
            ("sessions/chain", "x", "parameters"),
        ]:
            err = server.call(method, params).get("error") or {}
            sent += 1
            if err.get("code") != INVALID_PARAMS or field not in err.get("message", ""):
                failures.append(f"{method} {params!r}: {err}")
        assert server.proc.poll() is None, "the server died"
        listed = server.call("sessions/list", {})
        assert len(listed["result"]["sessions"]) >= 2
        print(f"{sent} requests with a wrong parameter, {len(failures)} not InvalidParams naming the field")
    assert not failures, f"{len(failures)} of {sent}:\n" + "\n".join(failures[:60])
    assert _files(corpus_projects) == before, "a refused request wrote something"


def test_a_second_initialize_is_refused_and_changes_nothing(corpus_projects: Path) -> None:
    """`initialize` may be sent once. A second one (here without options, which would mean the
    default `~/.claude/projects`) must not re-point the server at another projects folder."""
    with RawServer() as server:
        server.initialize(corpus_projects, watch=False)
        before = sorted(s["path"] for s in server.call("sessions/list", {})["result"]["sessions"])
        again = server.call("initialize", {"processId": None, "capabilities": {}}, timeout=LIVENESS)
        assert "result" not in again, "a second initialize was served"
        assert again["error"]["code"] == INVALID_REQUEST, again
        after = sorted(s["path"] for s in server.call("sessions/list", {})["result"]["sessions"])
        assert after == before and all(p.startswith(str(corpus_projects)) for p in after)


def test_requests_before_initialize_are_server_not_initialized(corpus_projects: Path) -> None:
    with RawServer() as server:
        early = server.call("sessions/list", {}, timeout=LIVENESS)
        assert early.get("error", {}).get("code") == -32002, early  # ServerNotInitialized
        server.initialize(corpus_projects, watch=False)
        assert server.call("sessions/list", {})["result"]["sessions"]


def test_malformed_requests_are_answered_invalid_request(corpus_projects: Path) -> None:
    """A request the server cannot take (wrong `jsonrpc`, a `method` that is not a string) is
    answered with InvalidRequest rather than dropped (the client would wait for ever) or
    answered as an internal error."""
    with RawServer() as server:
        server.initialize(corpus_projects, watch=False)
        for msg_id, message in [
            (11, {"jsonrpc": "1.0", "method": "sessions/list", "params": {}}),
            (12, {"method": "sessions/list", "params": {}}),
            (13, {"jsonrpc": "2.0", "method": 5, "params": {}}),
            (14, {"jsonrpc": "2.0", "method": None, "params": {}}),
        ]:
            server.send({"id": msg_id, **message})
            reply = server.answer(msg_id, timeout=LIVENESS)
            assert reply.get("error", {}).get("code") == INVALID_REQUEST, reply
        assert server.call("sessions/list", {})["result"]["sessions"]
