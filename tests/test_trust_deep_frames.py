"""A well-framed message nested deeper than the JSON parser goes does not end the server.

Python's parser raises `RecursionError` (not a `ValueError`) on 100 000 nested arrays: such a body, read by the
early reader before pygls loads (`server.lsp.readahead`) or by the server's frame reader (`server.lsp.framing`),
ended the server with a traceback (exit status 1). Its frame is whole, so the stream is still in step: the
message is logged and ignored, and the next one is served. Real server over stdio.
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
    assert b"nested too deeply" in server.stderr


@pytest.mark.parametrize("where", ["first frame", "after initialize", "after the server loaded"])
def test_a_deeply_nested_message_is_ignored_and_the_next_served(corpus_projects: Path, where: str) -> None:
    with RawServer() as server:
        if where == "first frame":
            server.write(deep("initialize", 1))
        server.initialize(corpus_projects, watch=False)
        if where == "after the server loaded":
            assert "error" in server.call("sessions/tree", {}, timeout=LIVENESS)  # no session named: pygls answers
        server.write(deep("sessions/list", 2))
        assert_serving(server)
