"""LSP frames over a raw socket, for the tests of `serve --tcp`: framing a message, an `initialize` carrying a
token, reading the answer to one id, and waiting for the server to close a connection."""

from __future__ import annotations

import json
import re
import socket
import weakref
from typing import Any

from server.lsp.listen import AUTH_TIMEOUT_S


def frame_body(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def frame(message: dict[str, Any]) -> bytes:
    return frame_body(json.dumps(message).encode())


def initialize(token: str | None, msg_id: int = 1) -> bytes:
    """An `initialize` with `initializationOptions.token` (none when `token` is None)."""
    options = {"token": token} if token is not None else {}
    params = {"processId": None, "rootUri": None, "capabilities": {}, "initializationOptions": options}
    return frame({"jsonrpc": "2.0", "id": msg_id, "method": "initialize", "params": params})


_unread: weakref.WeakKeyDictionary[socket.socket, bytes] = weakref.WeakKeyDictionary()
"""Bytes received after the answer `answer_to` returned, by socket."""


def answer_to(conn: socket.socket, msg_id: int, timeout: float = 30) -> dict[str, Any] | None:
    """The response with `msg_id`, or None when the connection closes (or is reset) first."""
    conn.settimeout(timeout)
    buf = _unread.pop(conn, b"")
    while True:
        while b"\r\n\r\n" in buf:
            head, _, rest = buf.partition(b"\r\n\r\n")
            n = int(re.search(rb"Content-Length: (\d+)", head).group(1))  # type: ignore[union-attr]
            if len(rest) < n:
                break
            message, buf = json.loads(rest[:n]), rest[n:]
            if message.get("id") == msg_id:
                _unread[conn] = buf
                return message  # type: ignore[no-any-return]
        try:
            data = conn.recv(65536)
        except ConnectionResetError:
            return None
        if not data:
            return None
        buf += data


def closed(conn: socket.socket) -> bool:
    """True once the server has closed `conn` (raises TimeoutError if it stays open past its deadline)."""
    conn.settimeout(AUTH_TIMEOUT_S + 10)
    try:
        while conn.recv(65536):
            pass
    except ConnectionResetError:
        pass
    return True
