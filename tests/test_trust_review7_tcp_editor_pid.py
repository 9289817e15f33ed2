"""Over `serve --tcp` the editor's `processId` is not watched: the editor did not start the server.

The server ends when the editor that started it is gone (`server/lsp/parentwatch.py`), judged by `initialize`'s
`processId` naming one of the server's ancestors. Over `--tcp` the editor connects from elsewhere (another
container or machine, another PID namespace), so its id may name any process here. Before the fix the ancestry was
read when `initialize` came, and an id that happened to name the process that started the server (a shell, a
service manager) was watched: that process ending ended the server under its connected editor. Here the server is
started by a launcher, the editor's id is the launcher's, and the launcher is killed.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from conftest import TESTS
from lspwire import answer_to, frame

ROOT = TESTS.parent
EXAMPLE = ROOT / "examples" / "projects"
TOKEN = "t0ken-for-the-test-" + "y" * 12
LAUNCHER = """
import subprocess, sys
proc = subprocess.Popen(sys.argv[1:], stderr=subprocess.PIPE)
line = proc.stderr.readline().decode()
print(proc.pid, line.strip(), flush=True)
proc.stderr.close()
subprocess.run(["sleep", "300"])
"""


def test_an_editor_over_tcp_naming_the_servers_launcher_is_not_watched(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CACHE_HOME": f"{tmp_path}/cache", "SESSION_LSP_TOKEN": TOKEN}
    cmd = [sys.executable, "-m", "server.cli", "serve", "--tcp", "127.0.0.1:0", "--projects-dir", str(EXAMPLE)]
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, *cmd], cwd=ROOT, env=env, stdout=subprocess.PIPE)
    assert launcher.stdout is not None
    server_pid, line = launcher.stdout.readline().decode().split(" ", 1)
    port = re.search(r"listening on 127\.0\.0\.1:(\d+);", line)
    assert port, line
    try:
        conn = socket.create_connection(("127.0.0.1", int(port.group(1))), timeout=10)
        params = {"processId": launcher.pid, "capabilities": {}, "initializationOptions": {"token": TOKEN}}
        conn.sendall(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}))
        answer = answer_to(conn, 1)
        assert answer is not None and "result" in answer, answer
        conn.sendall(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        launcher.kill()
        launcher.wait()
        time.sleep(2.5)
        conn.sendall(frame({"jsonrpc": "2.0", "id": 2, "method": "sessions/list", "params": {}}))
        listed = answer_to(conn, 2, timeout=15)
        assert listed is not None and "result" in listed, f"the server ended with its launcher: {json.dumps(listed)}"
    finally:
        try:
            os.kill(int(server_pid), signal.SIGKILL)
        except ProcessLookupError:
            pass
        if launcher.poll() is None:
            launcher.kill()
