"""A request nested deeper than the server's JSON parser reads (about 1,000 levels) is answered with InvalidParams
naming what is nested, and the server goes on serving. Before, it was logged and dropped: the client waited for its
answer for good. The real server over stdio; the message scanner on its own for strings that hold brackets."""

from __future__ import annotations

from pathlib import Path

import pytest
from rawlsp import LIVENESS, RawServer

from server.lsp.framing import TooDeep, too_deep


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


@pytest.mark.parametrize("levels", [1_100, 200_000])
def test_a_request_nested_too_deeply_is_answered_and_the_server_goes_on(tmp_path: Path, levels: int) -> None:
    projects = tmp_path / "projects"
    projects.mkdir()
    with RawServer() as server:
        server.initialize(projects)
        nested = b"[" * levels + b"]" * levels
        for msg_id, method in ((41, b"sessions/list"), (42, b"sessions/chain")):
            server.write(frame(b'{"jsonrpc":"2.0","id":%d,"method":"%s","params":{"x":%s}}' % (msg_id, method, nested)))
            error = server.answer(msg_id, timeout=LIVENESS)["error"]
            assert error["code"] == -32602 and "'params' nested too deeply" in error["message"], error
        server.write(frame(b'{"jsonrpc":"2.0","method":"$/setTrace","params":%s}' % nested))  # nothing to answer
        assert server.call("sessions/list", {})["result"]["sessions"] == []


def test_the_scanner_reads_strings_whole() -> None:
    body = b'{"jsonrpc":"2.0","method":"a]}[{\\"b","id":"x]\\\\","params":{"k":"]]]"},"y":[[1]],"z":null}'
    assert too_deep(body) == TooDeep({"jsonrpc": "2.0", "method": 'a]}[{"b', "id": "x]\\", "z": None}, ["params", "y"])
    assert too_deep(b"[" * 5000 + b"]" * 5000) is None
    assert too_deep(b'{"id":1,' + b"[" * 10) is None  # not JSON even then
