"""A fork stopped while it writes leaves no session behind, neither a torn one nor a temporary file.

`storage.fork.fork_session` wrote the new session as one append to `<new id>.jsonl`, created under its own name
first. The kernel ends a write(2) to a regular file part way when the process gets a fatal signal (SIGKILL; SIGTERM
and SIGHUP of `session-lsp fork`, which keeps their default action; `exit` of the server, whose `os._exit` kills the
thread writing): a fork of a 100 MB session stopped so kept 2 to 4 MB of it under the new session's name, ending in
half a line, which the CLI lists and resumes as a session of its own. The fork is now written into a file of no name
and linked in place whole (`storage.wholefile.put_new`).

Real processes (`session-lsp fork`, `session-lsp serve` over stdio), stopped as soon as they write into the project
folder; only liveness bounds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from rawlsp import LIVENESS, RawServer
from turnproc import ROOT, cli_env

SOURCE = "0f0f0f0f-1111-4222-8333-444444444444"
ROWS = 5000
TEXT = "x" * 20_000
"""About 100 MB of session: its fork's write takes long enough to be caught part way."""


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A projects folder holding one session of about 100 MB (a chain of prompts and replies)."""
    projects = tmp_path_factory.mktemp("forkmidway") / "config" / "projects"
    folder = projects / "-tmp-work"
    folder.mkdir(parents=True)
    parent = None
    with open(folder / f"{SOURCE}.jsonl", "w", encoding="utf-8") as fh:
        for n in range(ROWS):
            uid = str(uuid.uuid4())
            common = {"parentUuid": parent, "isSidechain": False, "cwd": "/tmp/work", "sessionId": SOURCE}
            if n % 2 == 0:
                message: dict[str, object] = {"role": "user", "content": f"prompt {n} {TEXT}"}
                row = {**common, "type": "user", "message": message, "uuid": uid}
            else:
                content = [{"type": "text", "text": f"reply {n} {TEXT}"}]
                message = {"id": f"msg_{n}", "role": "assistant", "model": "m", "content": content}
                row = {**common, "type": "assistant", "message": message, "uuid": uid}
            row["timestamp"] = "2025-01-01T00:00:00.000Z"
            fh.write(json.dumps(row) + "\n")
            parent = uid
    return projects


def others(projects: Path) -> list[Path]:
    """Every entry of the session's project folder but the session itself."""
    return sorted(p for p in (projects / "-tmp-work").iterdir() if p.name != f"{SOURCE}.jsonl")


def writing(pid: int, projects: Path) -> bool:
    """`pid` holds open a file of the project folder (named or not) other than the session, already 1 MiB long."""
    folder = str(projects / "-tmp-work") + "/"
    source = (projects / "-tmp-work" / f"{SOURCE}.jsonl").stat().st_ino
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if not os.readlink(f"/proc/{pid}/fd/{fd}").startswith(folder):
                continue
            st = os.stat(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if st.st_ino != source and st.st_size >= 1 << 20:
            return True
    return False


def until_writing(proc: subprocess.Popen[bytes], projects: Path) -> None:
    deadline = time.monotonic() + LIVENESS * 3
    while not writing(proc.pid, projects):
        assert proc.poll() is None, f"it ended ({proc.returncode}) before it was seen writing"
        assert time.monotonic() < deadline, "it never wrote the fork"
        time.sleep(0.0005)


def assert_nothing_torn_left(projects: Path) -> None:
    """No temporary file, and any session there whole: every line of it parses."""
    for path in others(projects):
        assert path.suffix == ".jsonl", f"{path.name} was left beside the session"
        data = path.read_bytes()
        assert data.endswith(b"\n"), f"{path.name}: {len(data)} bytes ending in a torn line"
        for line in data.splitlines():
            json.loads(line)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_fork_command_stopped_while_it_writes_leaves_nothing(big: Path, sig: signal.Signals) -> None:
    """Before: a `<new id>.jsonl` of 2 to 4 MB (of 100), ending in half a line."""
    for path in others(big):
        path.unlink()
    proc = subprocess.Popen(
        [sys.executable, "-m", "server.cli", "fork", SOURCE, "--projects-dir", str(big)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**cli_env(big.parent), "PYTHONPATH": str(ROOT)},
    )
    try:
        until_writing(proc, big)
        os.kill(proc.pid, sig)
        proc.communicate(timeout=LIVENESS)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    left = [(p.name, p.stat().st_size) for p in others(big)]
    print(f"{sig.name}: fork ended with status {proc.returncode}; left {left}")
    assert proc.returncode == -sig, "the fork was not stopped part way"
    assert_nothing_torn_left(big)
    assert others(big) == [], f"left beside the session: {left}"


def test_exit_of_the_server_while_it_writes_a_fork_leaves_nothing(big: Path) -> None:
    """Before: `exit` (`os._exit` on its own thread) ended the write of `sessions/fork` part way, its `<new id>.jsonl`
    torn."""
    for path in others(big):
        path.unlink()
    with RawServer(env={**cli_env(big.parent), "PYTHONPATH": str(ROOT)}) as server:
        server.initialize(big, watch=False)
        msg_id = server.request("sessions/fork", {"path": str(big / "-tmp-work" / f"{SOURCE}.jsonl")})
        until_writing(server.proc, big)
        server.notify("exit")
        rc, _ = server.wait_exit(LIVENESS)
        assert rc is not None, "the server still runs after exit"
        answered = msg_id in server.responses
    left = [(p.name, p.stat().st_size) for p in others(big)]
    print(f"exit: the server ended with status {rc}, the fork {'answered' if answered else 'not answered'}; {left}")
    assert_nothing_torn_left(big)
    if not answered:
        assert others(big) == [], f"left beside the session by a fork never answered: {left}"
