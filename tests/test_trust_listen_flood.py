"""`serve --tcp` under attack from another local process: the editor with the token still gets in, alone.

Before, 16 silent connections took every place being checked, so each new connection (the editor's too) was
closed at once, and reopening them kept the editor out for good; a token with a lone surrogate or a deeply
nested first frame raised in the checking thread (a traceback, no refusal); and two connections finishing
with the token together could both pass the "no editor yet" test. Each test runs the real server on a real
loopback port and real sockets.
"""

from __future__ import annotations

import collections
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import TESTS

from server.lsp.listen import AUTH_TIMEOUT_S

ROOT = TESTS.parent
EXAMPLE = ROOT / "examples" / "projects"
TOKEN = "t0ken-for-the-test-" + "x" * 12
BOUND_S = 15
"""A hang detector, not a speed claim: how long an answer may take under attack."""


def _frame_body(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def _frame(message: dict[str, Any]) -> bytes:
    return _frame_body(json.dumps(message).encode())


def _initialize(token: str, msg_id: int = 1) -> bytes:
    params = {"processId": None, "rootUri": None, "capabilities": {}, "initializationOptions": {"token": token}}
    return _frame({"jsonrpc": "2.0", "id": msg_id, "method": "initialize", "params": params})


_unread: weakref.WeakKeyDictionary[socket.socket, bytes] = weakref.WeakKeyDictionary()
"""Bytes received after the answer `_answer` returned, by socket."""


def _answer(conn: socket.socket, msg_id: int, timeout: float = BOUND_S) -> dict[str, Any] | None:
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


def _closed(conn: socket.socket) -> bool:
    """True once the server has closed `conn` (raises TimeoutError if it stays open past its deadline)."""
    conn.settimeout(AUTH_TIMEOUT_S + 10)
    try:
        while conn.recv(65536):
            pass
    except ConnectionResetError:
        pass
    return True


class Served:
    """The real `serve --tcp` process, its port, and everything it wrote on stderr (read as it comes)."""

    def __init__(self, tmp_path: Path) -> None:
        cmd = [sys.executable, "-m", "server.cli", "serve", "--tcp", "127.0.0.1:0", "--projects-dir", str(EXAMPLE)]
        env = {
            **os.environ,
            "HOME": str(tmp_path),
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "SESSION_LSP_TOKEN": TOKEN,
        }
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stderr=subprocess.PIPE, env=env)
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline().decode()
        found = re.search(r"listening on 127\.0\.0\.1:(\d+);", line)
        assert found, line
        self.port = int(found.group(1))
        self.err: list[bytes] = []
        self.drain = threading.Thread(target=self._drain, daemon=True)  # a full pipe would stall the server
        self.drain.start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.err.append(line)

    def so_far(self) -> str:
        """What the server has written on stderr by now (given a moment to reach the pipe)."""
        time.sleep(0.5)
        return b"".join(self.err).decode(errors="replace")

    def stderr(self) -> str:
        """What the server wrote on stderr, once it has ended."""
        self.proc.wait(BOUND_S)
        self.drain.join(BOUND_S)
        return b"".join(self.err).decode(errors="replace")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    server = Served(tmp_path)
    yield server
    if server.proc.poll() is None:
        server.proc.kill()
    server.proc.wait()


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=BOUND_S)


def _serve_and_leave(editor: socket.socket, server: Served) -> None:
    """The admitted editor lists the sessions and shuts the server down, which then ends cleanly; nothing the
    listener or its threads did left a traceback (pygls may log one of its own at `exit`, so the listener's
    part is looked at before that, and the rest for the listener's names)."""
    editor.sendall(
        _frame({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        + _frame({"jsonrpc": "2.0", "id": 2, "method": "sessions/list", "params": {}})
    )
    listed = _answer(editor, 2, timeout=30)
    assert listed is not None and len(listed["result"]["sessions"]) == 3
    before = server.so_far()
    assert "Traceback" not in before, before
    editor.sendall(_frame({"jsonrpc": "2.0", "id": 3, "method": "shutdown"}))
    assert _answer(editor, 3, timeout=30) is not None
    editor.sendall(_frame({"jsonrpc": "2.0", "method": "exit"}))
    assert server.proc.wait(BOUND_S) == 0
    err = server.stderr()
    assert "listen.py" not in err and "tcp-" not in err, err


def test_held_and_reopened_connections_do_not_keep_the_editor_out(served: Served) -> None:
    port = served.port
    held = [_connect(port) for _ in range(40)]  # silent, held open by the attacker
    stop = threading.Event()

    def reopen() -> None:
        """Open connection after connection, each a few bytes of a header and no more, closing the oldest."""
        opened: collections.deque[socket.socket] = collections.deque()
        while not stop.is_set():
            try:
                conn = socket.create_connection(("127.0.0.1", port), timeout=2)
                conn.sendall(b"Content-Len")
            except OSError:  # refused once the editor is in, or dropped by the server
                time.sleep(0.01)
                continue
            opened.append(conn)
            if len(opened) > 30:
                opened.popleft().close()
        for conn in opened:
            conn.close()

    def slow_loris() -> None:
        """Send a whole header a byte a second, and a body never."""
        try:
            conn = socket.create_connection(("127.0.0.1", port), timeout=2)
            for byte in b"Content-Length: 999\r\n\r\n":
                if stop.wait(1.0):
                    break
                conn.send(bytes([byte]))
            conn.close()
        except OSError:
            pass

    attackers = [threading.Thread(target=reopen, daemon=True) for _ in range(3)]
    attackers += [threading.Thread(target=slow_loris, daemon=True) for _ in range(8)]
    for thread in attackers:
        thread.start()
    try:
        time.sleep(1.5)  # the flood is on, and every place being checked is taken
        editor = _connect(port)
        editor.sendall(_initialize(TOKEN))
        answer = _answer(editor, 1)
    finally:
        stop.set()
        for thread in attackers:
            thread.join(BOUND_S)
        for conn in held:
            conn.close()
    assert answer is not None and "capabilities" in answer.get("result", {}), answer
    _serve_and_leave(editor, served)


def test_malformed_first_frames_are_refused_cleanly_and_the_editor_admitted_after(served: Served) -> None:
    port = served.port
    surrogate = _connect(port)  # JSON's "\ud800": a str that cannot be encoded
    surrogate.sendall(
        _frame_body(
            b'{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"initializationOptions":{"token":"\\ud800"}}}'
        )
    )
    refused = _answer(surrogate, 7)
    assert refused is not None and refused["error"]["code"] == -32600, refused
    assert "token" in refused["error"]["message"] and _closed(surrogate)
    nested = _connect(port)  # deeper than json.loads recurses
    nested.sendall(_frame_body(b"[" * 200_000))
    assert _answer(nested, 1) is None and _closed(nested)
    nested_id = _connect(port)  # the id is known, the rest too deep
    nested_id.sendall(_frame_body(b'{"jsonrpc":"2.0","id":8,"method":"initialize","params":' + b"[" * 200_000))
    assert _answer(nested_id, 8) is None and _closed(nested_id)
    long_length = _connect(port)  # more digits than int() converts
    long_length.sendall(b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n{}")
    assert _answer(long_length, 1) is None and _closed(long_length)
    editor = _connect(port)
    editor.sendall(_initialize(TOKEN))
    answer = _answer(editor, 1)
    assert answer is not None and "capabilities" in answer.get("result", {}), answer
    _serve_and_leave(editor, served)


def test_of_many_editors_with_the_token_at_once_exactly_one_is_admitted(served: Served) -> None:
    port = served.port
    conns = [_connect(port) for _ in range(12)]
    time.sleep(1.0)  # every one accepted and being read
    data = _initialize(TOKEN)
    for conn in conns:
        conn.sendall(data[:-1])
    time.sleep(0.5)
    for conn in conns:  # all complete at the same moment
        conn.sendall(data[-1:])
    answers = [_answer(conn, 1) for conn in conns]
    admitted = [conn for conn, answer in zip(conns, answers) if answer is not None and "result" in answer]
    assert len(admitted) == 1, answers
    losers = [answer for conn, answer in zip(conns, answers) if conn is not admitted[0]]
    for answer in losers:  # refused as a wrong token is, and closed: none left open and unserved
        assert answer is not None and answer["error"]["code"] == -32600, answer
        assert "another editor" in answer["error"]["message"]
    assert all(_closed(conn) for conn in conns if conn is not admitted[0])
    _serve_and_leave(admitted[0], served)
