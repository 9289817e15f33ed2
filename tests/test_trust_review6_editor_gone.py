"""The server ends when the editor that started it is gone, even while its input is still held open.

LSP says a server must exit once the process of `initialize.processId` is gone. The server ended with its standard
input, and so it ran on, with its turns and their tools, when the editor died while another process held the other
end of that pipe (a child the editor left behind; here a `sleep` given the descriptor). Before the fix the server was
still running 10 s after the editor's SIGKILL; it now ends as `exit` without `shutdown` does (status 1)
(`server/lsp/parentwatch.py`). An id that names no ancestor of the server (an editor in another PID namespace) is
not watched: the end of that process leaves the server serving.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from rawlsp import LIVENESS, RawServer
from turnproc import ROOT

EDITOR = r"""
import json, os, subprocess, sys, time
projects, root = sys.argv[1], sys.argv[2]
r, w = os.pipe()
server = subprocess.Popen([sys.executable, "-m", "server.cli", "serve", "--stdio"], stdin=r, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, cwd=root)
os.close(r)
holder = subprocess.Popen(["sleep", "300"], pass_fds=(w,))  # the pipe to the server outlives this editor

def send(msg):
    body = json.dumps(msg).encode()
    os.write(w, b"Content-Length: %d\r\n\r\n" % len(body) + body)

def answer():
    length = 0
    while True:
        line = server.stdout.readline()
        if line in (b"\r\n", b""):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(server.stdout.read(length))

send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
      "params": {"processId": os.getpid(), "capabilities": {}, "initializationOptions": {"projectsDir": projects}}})
while answer().get("id") != 1:
    pass
send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
print(server.pid, holder.pid, flush=True)
time.sleep(600)
"""


def _gone(pid: int) -> bool:
    """No such process, or only its exit status left to collect."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_the_server_ends_when_its_editor_dies_with_the_pipe_held(tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    projects.mkdir()
    script = tmp_path / "editor.py"
    script.write_text(EDITOR)
    editor = subprocess.Popen(
        [sys.executable, str(script), str(projects), str(ROOT)], stdout=subprocess.PIPE, text=True, cwd=tmp_path
    )
    server_pid = holder_pid = 0
    try:
        assert editor.stdout is not None
        server_pid, holder_pid = (int(x) for x in editor.stdout.readline().split())
        assert not _gone(server_pid)
        editor.send_signal(signal.SIGKILL)
        editor.wait()
        began = time.monotonic()
        while not _gone(server_pid) and time.monotonic() - began < LIVENESS:
            time.sleep(0.05)
        assert _gone(server_pid), f"the server still runs {LIVENESS} s after its editor was killed"
        assert not _gone(holder_pid)  # its input was held open all along: the end came from the watch
    finally:
        editor.kill()
        for pid in (server_pid, holder_pid):
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def test_an_id_of_no_ancestor_is_not_watched(tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    projects.mkdir()
    other = subprocess.Popen(["sleep", "300"])
    with RawServer() as server:
        reply = server.call(
            "initialize",
            {"processId": other.pid, "capabilities": {}, "initializationOptions": {"projectsDir": str(projects)}},
        )
        assert "result" in reply, reply
        server.notify("initialized", {})
        other.kill()
        other.wait()
        time.sleep(2.5)  # longer than a look at a process that cannot be waited for
        assert server.proc.poll() is None, "the server ended with a process that is not its editor"
        listed = server.call("sessions/list", {})
        assert "result" in listed, json.dumps(listed)[:500]
