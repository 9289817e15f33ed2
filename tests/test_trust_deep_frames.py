"""A well-framed message nested deeper than the JSON parser goes does not end the server.

Python's parser raises `RecursionError` (not a `ValueError`) on 100 000 nested arrays: such a body, read by the
early reader before pygls loads (`server.lsp.readahead`) or by the server's frame reader (`server.lsp.framing`),
ended the server with a traceback (exit status 1). Its frame is whole, so the stream is still in step: the
request is refused (InvalidParams naming its nested member, `tests/test_trust_deep_requests.py`), and the next one
is served. Real server over stdio.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rawlsp import LIVENESS, RawServer

DEPTH = 100_000


def deep(method: str, msg_id: int) -> bytes:
    body = (
        b'{"jsonrpc":"2.0","id":%d,"method":"%s","params":{"x":' % (msg_id, method.encode())
        + b"[" * DEPTH
        + b"]" * DEPTH
        + b"}}"
    )
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def assert_serving(server: RawServer) -> None:
    answer = server.call("sessions/list", {}, timeout=LIVENESS)
    assert "result" in answer, (answer, server.stderr[-1500:])
    assert server.call("shutdown", timeout=LIVENESS).get("result", "x") is None
    server.notify("exit")
    rc, _ = server.wait_exit(LIVENESS)
    assert rc == 0, (rc, server.stderr[-1500:])


def assert_refused(server: RawServer, msg_id: int) -> None:
    error = server.answer(msg_id, timeout=LIVENESS)["error"]
    assert error["code"] == -32602 and "'params' nested too deeply" in error["message"], error


@pytest.mark.parametrize("where", ["first frame", "after initialize", "after the server loaded"])
def test_a_deeply_nested_request_is_refused_and_the_next_served(corpus_projects: Path, where: str) -> None:
    with RawServer() as server:
        if where == "first frame":
            server.write(deep("initialize", 9001))
            assert_refused(server, 9001)
        server.initialize(corpus_projects, watch=False)
        if where == "after the server loaded":
            assert "error" in server.call("sessions/tree", {}, timeout=LIVENESS)  # no session named: pygls answers
        server.write(deep("sessions/list", 9002))
        assert_refused(server, 9002)
        assert_serving(server)
