"""`serve --tcp`: a port any process of the machine can reach serves one editor, the one that knows the token.

Before, `--tcp` took every connection: one that sent `sessions/list` straight away was answered, and a second
connection took the server's output from the first. Each test runs the real server on a real loopback port.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import TESTS
from lspwire import answer_to, closed, frame, initialize

ROOT = TESTS.parent
EXAMPLE = ROOT / "examples" / "projects"
TOKEN = "t0ken-for-the-test-" + "x" * 12


def _serve(tmp_path: Path, *extra: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], int]:
    cmd = [sys.executable, "-m", "server.cli", "serve", "--tcp", "127.0.0.1:0", "--projects-dir", str(EXAMPLE), *extra]
    base = {**os.environ, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc = subprocess.Popen(cmd, cwd=ROOT, stderr=subprocess.PIPE, env={**base, **(env or {})})
    assert proc.stderr is not None
    line = proc.stderr.readline().decode()
    found = re.search(r"listening on 127\.0\.0\.1:(\d+);", line)
    assert found, line
    return proc, int(found.group(1))


@pytest.fixture
def served(tmp_path: Path) -> Any:
    proc, port = _serve(tmp_path, env={"SESSION_LSP_TOKEN": TOKEN})
    yield proc, port
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def _editor_session(port: int) -> list[str]:
    """Initialize with the token and list the sessions: what an editor gets."""
    conn = _connect(port)
    conn.sendall(initialize(TOKEN))
    answer = answer_to(conn, 1)
    assert answer is not None and "capabilities" in answer["result"], answer
    conn.sendall(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    conn.sendall(frame({"jsonrpc": "2.0", "id": 2, "method": "sessions/list", "params": {}}))
    listed = answer_to(conn, 2)
    assert listed is not None
    conn.sendall(frame({"jsonrpc": "2.0", "id": 3, "method": "shutdown"}))
    assert answer_to(conn, 3) is not None
    conn.sendall(frame({"jsonrpc": "2.0", "method": "exit"}))
    conn.close()
    return sorted(s["sessionId"] for s in listed["result"]["sessions"])


def test_connections_without_the_token_get_nothing_and_the_editor_is_served(served: Any) -> None:
    proc, port = served
    straight = _connect(port)  # no initialize: asks for the sessions at once
    straight.sendall(frame({"jsonrpc": "2.0", "id": 7, "method": "sessions/list", "params": {}}))
    assert answer_to(straight, 7) is None and closed(straight)
    for token in (None, "wrong-" + TOKEN[6:], TOKEN[:-1]):
        conn = _connect(port)
        conn.sendall(initialize(token))
        answer = answer_to(conn, 1)
        assert answer is not None and answer["error"]["code"] == -32600, answer
        assert "token" in answer["error"]["message"] and TOKEN not in json.dumps(answer)
        assert closed(conn)
    huge = _connect(port)
    huge.sendall(b"Content-Length: 99999999999\r\n\r\n")
    assert answer_to(huge, 1) is None
    sessions = _editor_session(port)
    assert len(sessions) == 3  # the example's three sessions
    assert proc.wait(10) == 0


def test_one_editor_only_a_second_connection_is_refused(served: Any) -> None:
    proc, port = served
    editor = _connect(port)
    editor.sendall(initialize(TOKEN))
    assert answer_to(editor, 1) is not None
    with pytest.raises(ConnectionRefusedError):  # the port is closed once an editor is in
        socket.create_connection(("127.0.0.1", port), timeout=5).sendall(initialize(TOKEN, 9))
    editor.sendall(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    editor.sendall(frame({"jsonrpc": "2.0", "id": 2, "method": "sessions/list", "params": {}}))
    listed = answer_to(editor, 2)
    assert listed is not None and len(listed["result"]["sessions"]) == 3
    editor.close()  # the editor gone: the server ends, as over stdio
    proc.wait(15)


def _still_open(conn: socket.socket) -> bool:
    conn.setblocking(False)
    try:
        return conn.recv(1) != b""  # data would be a surprise too
    except BlockingIOError:
        return True
    finally:
        conn.setblocking(True)


def test_a_silent_connection_does_not_keep_the_editor_waiting(served: Any) -> None:
    proc, port = served
    silent = [_connect(port) for _ in range(3)]
    for conn in silent:
        conn.sendall(b"Content-Len")  # and nothing more
    editor = _connect(port)
    editor.sendall(initialize(TOKEN))
    assert answer_to(editor, 1) is not None
    assert all(_still_open(conn) for conn in silent)  # served while they were still being waited for
    editor.sendall(
        frame({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        + frame({"jsonrpc": "2.0", "id": 2, "method": "sessions/list", "params": {}})
    )
    listed = answer_to(editor, 2)
    assert listed is not None and len(listed["result"]["sessions"]) == 3
    assert all(closed(conn) for conn in silent)  # dropped at their deadline
    editor.sendall(frame({"jsonrpc": "2.0", "id": 3, "method": "shutdown"}))
    assert answer_to(editor, 3) is not None
    editor.sendall(frame({"jsonrpc": "2.0", "method": "exit"}))
    assert proc.wait(10) == 0


def test_what_a_client_sends_on_without_waiting_is_served(served: Any) -> None:
    proc, port = served
    editor = _connect(port)
    editor.sendall(
        initialize(TOKEN)
        + frame({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        + frame({"jsonrpc": "2.0", "id": 2, "method": "sessions/list", "params": {}})
    )
    assert answer_to(editor, 1) is not None
    listed = answer_to(editor, 2)
    assert listed is not None and len(listed["result"]["sessions"]) == 3
    editor.close()
    proc.wait(15)


def test_tcp_listens_on_loopback_only(tmp_path: Path) -> None:
    for host in ("0.0.0.0", "::", socket.gethostbyname(socket.gethostname())):
        if host.startswith("127."):
            continue
        target = f"[{host}]:0" if ":" in host else f"{host}:0"
        done = subprocess.run(
            [sys.executable, "-m", "server.cli", "serve", "--tcp", target, "--projects-dir", str(EXAMPLE)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "HOME": str(tmp_path)},
        )
        assert done.returncode == 2 and "loopback only" in done.stderr, (host, done.stderr)


def test_the_token_file_is_made_private_and_a_shared_or_linked_one_refused(tmp_path: Path) -> None:
    made = tmp_path / "token"
    proc, port = _serve(tmp_path, "--token-file", str(made))
    try:
        assert made.stat().st_mode & 0o777 == 0o600
        token = made.read_text().strip()
        conn = _connect(port)
        conn.sendall(initialize(token))
        answer = answer_to(conn, 1)
        assert answer is not None and "result" in answer
    finally:
        proc.kill()
        proc.wait()
    shared = tmp_path / "shared"
    shared.write_text(TOKEN)
    shared.chmod(0o644)
    outside = tmp_path / "outside"
    outside.write_text(TOKEN)
    outside.chmod(0o600)
    linked = tmp_path / "linked"
    linked.symlink_to(outside)
    for path in (shared, linked):
        done = subprocess.run(
            [sys.executable, "-m", "server.cli", "serve", "--tcp", "127.0.0.1:0", "--token-file", str(path)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "HOME": str(tmp_path)},
        )
        assert done.returncode == 2 and str(path) in done.stderr, done.stderr


def test_no_websocket_listener(tmp_path: Path) -> None:
    """A web page may open a WebSocket to a loopback port: there is no `--ws`."""
    done = subprocess.run(
        [sys.executable, "-m", "server.cli", "serve", "--ws", "127.0.0.1:0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert done.returncode == 2 and "--ws" in done.stderr
