"""`serve --tcp` under attack from another local process: the editor with the token still gets in, alone.

Before, 16 silent connections took every place being checked, so each new connection (the editor's too) was
closed at once, and reopening them kept the editor out for good; a token with a lone surrogate or a deeply
nested first frame raised in the checking thread (a traceback, no refusal); and two connections finishing
with the token together could both pass the "no editor yet" test. Each test runs the real server on a real
loopback port and real sockets.
"""

from __future__ import annotations

import collections
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import TESTS
from lspwire import answer_to, closed, frame, frame_body, initialize

ROOT = TESTS.parent
EXAMPLE = ROOT / "examples" / "projects"
TOKEN = "t0ken-for-the-test-" + "x" * 12
BOUND_S = 15
"""A hang detector, not a speed claim: how long an answer may take under attack."""


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
        frame({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        + frame({"jsonrpc": "2.0", "id": 2, "method": "sessions/list", "params": {}})
    )
    listed = answer_to(editor, 2, timeout=30)
    assert listed is not None and len(listed["result"]["sessions"]) == 3
    before = server.so_far()
    assert "Traceback" not in before, before
    editor.sendall(frame({"jsonrpc": "2.0", "id": 3, "method": "shutdown"}))
    assert answer_to(editor, 3, timeout=30) is not None
    editor.sendall(frame({"jsonrpc": "2.0", "method": "exit"}))
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
        editor.sendall(initialize(TOKEN))
        answer = answer_to(editor, 1, BOUND_S)
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
        frame_body(
            b'{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"initializationOptions":{"token":"\\ud800"}}}'
        )
    )
    refused = answer_to(surrogate, 7, BOUND_S)
    assert refused is not None and refused["error"]["code"] == -32600, refused
    assert "token" in refused["error"]["message"] and closed(surrogate)
    nested = _connect(port)  # deeper than json.loads recurses
    nested.sendall(frame_body(b"[" * 200_000))
    assert answer_to(nested, 1, BOUND_S) is None and closed(nested)
    nested_id = _connect(port)  # the id is known, the rest too deep
    nested_id.sendall(frame_body(b'{"jsonrpc":"2.0","id":8,"method":"initialize","params":' + b"[" * 200_000))
    assert answer_to(nested_id, 8, BOUND_S) is None and closed(nested_id)
    long_length = _connect(port)  # more digits than int() converts
    long_length.sendall(b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n{}")
    assert answer_to(long_length, 1, BOUND_S) is None and closed(long_length)
    editor = _connect(port)
    editor.sendall(initialize(TOKEN))
    answer = answer_to(editor, 1, BOUND_S)
    assert answer is not None and "capabilities" in answer.get("result", {}), answer
    _serve_and_leave(editor, served)


def test_of_many_editors_with_the_token_at_once_exactly_one_is_admitted(served: Served) -> None:
    port = served.port
    conns = [_connect(port) for _ in range(12)]
    time.sleep(1.0)  # every one accepted and being read
    data = initialize(TOKEN)
    for conn in conns:
        conn.sendall(data[:-1])
    time.sleep(0.5)
    for conn in conns:  # all complete at the same moment
        conn.sendall(data[-1:])
    answers = [answer_to(conn, 1, BOUND_S) for conn in conns]
    admitted = [conn for conn, answer in zip(conns, answers) if answer is not None and "result" in answer]
    assert len(admitted) == 1, answers
    losers = [answer for conn, answer in zip(conns, answers) if conn is not admitted[0]]
    for answer in losers:  # refused as a wrong token is, and closed: none left open and unserved
        assert answer is not None and answer["error"]["code"] == -32600, answer
        assert "another editor" in answer["error"]["message"]
    assert all(closed(conn) for conn in conns if conn is not admitted[0])
    _serve_and_leave(admitted[0], served)


def test_an_initialize_sent_a_byte_at_a_time_is_admitted(served: Served) -> None:
    """The headers' end is searched only in what each read added (a frame in 64-byte pieces cost the one reading
    thread quadratic time): split anywhere, even inside `\\r\\n\\r\\n`, the frame is still found whole."""
    editor = _connect(served.port)
    editor.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for byte in initialize(TOKEN):
        editor.sendall(bytes([byte]))
        time.sleep(0.0005)  # each its own segment, most of them its own read
    answer = answer_to(editor, 1, BOUND_S)
    assert answer is not None and "capabilities" in answer.get("result", {}), answer
    _serve_and_leave(editor, served)
