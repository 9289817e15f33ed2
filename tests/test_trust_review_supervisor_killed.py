"""A Bash command that kills or stops its own supervisor does not outlive its call, a cancel or session-lsp.

The supervisor (`server/agent/tools/supervise.py`) holds the command's tree and ends it on a timeout, a cancel or
the death of session-lsp. A command can act on it (it runs with the same rights):

- `kill -9 $PPID`: what the command started with `setsid` had only the supervisor to hold it. It went to init and
  ran on past the call, a cancel and session-lsp's exit (f123166 killed the supervisor's process group, which a
  `setsid` child has left). `serve` and `turn` are now child subreapers: the orphans come to them, in sessions
  not theirs, and are killed as soon as the supervisor is found dead, also when that happens after the call
  returned (a background job killing it later).
- `kill -STOP $PPID`: a stopped supervisor never reads its lifeline, so a SIGKILL of session-lsp left the whole
  tree running. The supervisor is now a process group of its own in session-lsp's session (the command in a
  session of its own): when session-lsp dies, that group is orphaned, and the kernel sends a stopped orphaned
  group SIGHUP and SIGCONT; the supervisor wakes and ends the tree.

Real processes: the real `session-lsp turn` and `session-lsp serve` over stdio, the scripted model. Every process
of a call holds a unique marker in its command line; the only bounds are liveness ones.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rawlsp import LIVENESS, RawServer
from turnproc import TurnProcess, commands_with, live_with, new_session, wait_gone


def hidden(marker: str) -> str:
    """A shell holding `marker` in a session of its own, whose parent (a subshell) exits at once."""
    return f"(setsid bash -c 'sleep 600; : {marker}' &)"


def killing(marker: str) -> str:
    """Starts a hidden shell, kills its supervisor, starts more (a loop, so some come after the kill), hangs."""
    return f"{hidden(marker)}; kill -9 $PPID; for i in 1 2 3 4 5; do {hidden(marker)}; done; sleep 600; : {marker}"


def stopping(marker: str) -> str:
    """Starts a hidden shell, stops its supervisor, hangs."""
    return f"{hidden(marker)}; kill -STOP $PPID; sleep 600; : {marker}"


def killing_later(marker: str) -> str:
    """Returns at once, leaving a hidden shell and a background job that kills the supervisor once the file `go`
    exists (`$PPID` in a subshell is still the supervisor's pid)."""
    job = f"(until [ -e go ]; do sleep 0.05; done; kill -9 $PPID; sleep 600; : {marker}) >/dev/null 2>&1 &"
    return f"{hidden(marker)}; {job} echo started"


@pytest.fixture
def kill_marked(marker: str) -> Iterator[None]:
    """Whatever a failure leaves running is killed, each process by its pid (a stopped supervisor too)."""
    yield
    for pid in live_with(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def wait_for(marker: str, count: int) -> None:
    began = time.monotonic()
    while len(commands_with(marker)) < count:
        assert time.monotonic() - began < LIVENESS, f"the command started {len(commands_with(marker))} of {count}"
        time.sleep(0.05)


def assert_all_gone(marker: str, after: str) -> None:
    gone = wait_gone(marker, LIVENESS)
    assert gone is not None, f"{len(commands_with(marker))} marked processes still run {after}"


def bash_turn(server: RawServer, work: Path, command: str, msg_id: str) -> None:
    params = {"prompt": f"BASH {command}", "cwd": str(work), "provider": "anthropic", "tools": ["Bash"]}
    server.request("sessions/runTurn", params, msg_id=msg_id)


@pytest.mark.usefixtures("kill_marked")
def test_a_turn_whose_command_kills_its_supervisor_leaves_nothing(projects: Path, work: Path, marker: str) -> None:
    """Before: the call returned (exit -9), the turn ended, and the hidden shells ran on."""
    sid, _ = new_session(projects, work)
    turn = TurnProcess(projects, work, f"BASH {killing(marker)}", "--resume", sid, "--allow", "Bash")
    try:
        rc, _ = turn.wait(LIVENESS)
        assert rc == 0, turn.stderr[-1500:]
        assert_all_gone(marker, "after the turn ended")
    finally:
        turn.kill()


@pytest.mark.usefixtures("kill_marked")
def test_the_server_ends_what_a_command_that_killed_its_supervisor_left(
    server: RawServer, work: Path, marker: str
) -> None:
    """While the server runs on: the orphans are its children, killed once the supervisor is found dead."""
    bash_turn(server, work, killing(marker), "killing")
    reply = server.answer("killing", timeout=LIVENESS)
    assert "result" in reply, reply
    assert_all_gone(marker, "after the call returned, the server still running")
    assert server.proc.poll() is None


@pytest.mark.usefixtures("kill_marked")
def test_a_background_job_that_kills_the_supervisor_after_the_call_leaves_nothing(
    server: RawServer, work: Path, marker: str
) -> None:
    """The call is over and its supervisor holds what it left; a job of it kills the supervisor then."""
    bash_turn(server, work, killing_later(marker), "later")
    reply = server.answer("later", timeout=LIVENESS)
    assert "result" in reply, reply
    wait_for(marker, 2)  # the hidden shell and the job
    (work / "go").touch()
    began = time.monotonic()
    while live_with(marker) and any(b"supervise.py" in _argv(p) for p in live_with(marker)):
        assert time.monotonic() - began < LIVENESS, "the job never killed the supervisor"
        time.sleep(0.05)
    assert_all_gone(marker, "after a job of the finished call killed its supervisor")
    assert server.proc.poll() is None


@pytest.mark.usefixtures("kill_marked")
def test_sigkill_of_a_turn_whose_command_stopped_its_supervisor_leaves_nothing(
    projects: Path, work: Path, marker: str
) -> None:
    """Before: the stopped supervisor never read its lifeline, and the command with its hidden shell ran on."""
    sid, _ = new_session(projects, work)
    turn = TurnProcess(projects, work, f"BASH {stopping(marker)}", "--resume", sid, "--allow", "Bash")
    try:
        turn.wait_tool()
        wait_for(marker, 2)
        _wait_stopped(marker)
        turn.proc.send_signal(signal.SIGKILL)
        turn.proc.wait()
        assert_all_gone(marker, "after the SIGKILL of `session-lsp turn`")
    finally:
        turn.kill()


@pytest.mark.usefixtures("kill_marked")
def test_sigkill_of_the_server_ends_a_command_that_stopped_its_supervisor(
    server: RawServer, work: Path, marker: str
) -> None:
    bash_turn(server, work, stopping(marker), "stopping")
    wait_for(marker, 2)
    _wait_stopped(marker)
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait()
    assert_all_gone(marker, "after the SIGKILL of the server")


def _wait_stopped(marker: str) -> None:
    """Until the supervisor of the marked command is stopped (state T)."""
    began = time.monotonic()
    while not any(b"supervise.py" in _argv(p) and _state(p) == "T" for p in live_with(marker)):
        assert time.monotonic() - began < LIVENESS, "the command never stopped its supervisor"
        time.sleep(0.05)


def _argv(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""
