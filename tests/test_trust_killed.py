"""SIGKILL of the language server or of `session-lsp turn` ends every process a model's Bash call started.

SIGKILL cannot be caught, so nothing in the killed process can stop its commands; what started them must
end with it by itself. Each test runs a real turn (scripted model, `BASH <command>`) whose command starts
a process that leaves the tree (`setsid` from a subshell that exits at once: no parent chain, no process
group leads to it), a plain background job, and (while hung) the shell itself, each holding a unique
marker; then it SIGKILLs the server or the command, and counts the marked processes left alive. The
only bound is a liveness one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rawlsp import LIVENESS, RawServer
from realcli import find_claude, provider_env
from scripted_api import ScriptedModelServer
from turnproc import ROOT, TurnProcess, cli_env, commands_with, live_with, new_session, wait_gone


def spawning(marker: str, *, hang: bool) -> str:
    """A command that starts a process outside its tree and a background job, then hangs or returns."""
    hidden = f"(setsid bash -c 'sleep 600; echo {marker} hidden' &)"
    background = f"bash -c 'sleep 600; echo {marker} background' >/dev/null 2>&1 &"
    return f"{hidden}; {background} " + (f"sleep 600; echo {marker} shell" if hang else f"echo {marker} started")


def wait_for(marker: str, count: int) -> None:
    began = time.monotonic()
    while len(commands_with(marker)) < count:
        assert time.monotonic() - began < LIVENESS, f"the command started {len(commands_with(marker))} of {count}"
        time.sleep(0.05)


@pytest.fixture
def kill_marked(marker: str) -> Iterator[None]:
    """Whatever a failure leaves running is killed, each process by its pid (some lead no group)."""
    yield
    for pid in commands_with(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def sigkill_then_assert_all_gone(proc: subprocess.Popen[bytes], marker: str, what: str) -> None:
    alive = len(commands_with(marker))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    gone = wait_gone(marker, LIVENESS)
    assert gone is not None, f"{len(commands_with(marker))} of {alive} marked processes outlived the SIGKILL of {what}"
    print(f"SIGKILL of {what}: {alive} marked processes alive at the kill, none {gone:.2f} s later")


@pytest.mark.usefixtures("kill_marked")
def test_sigkill_of_the_server_ends_a_hung_bash_and_all_it_started(projects: Path, work: Path, marker: str) -> None:
    with RawServer() as server:
        server.initialize(projects, watch=False)
        server.request(
            "sessions/runTurn",
            {
                "prompt": f"BASH {spawning(marker, hang=True)}",
                "cwd": str(work),
                "provider": "anthropic",
                "tools": ["Bash"],
            },
            msg_id="spawning",
        )
        wait_for(marker, 3)
        sigkill_then_assert_all_gone(server.proc, marker, "the server")


@pytest.mark.usefixtures("kill_marked")
def test_sigkill_of_the_server_ends_what_a_finished_bash_left_running(projects: Path, work: Path, marker: str) -> None:
    with RawServer() as server:
        server.initialize(projects, watch=False)
        reply = server.call(
            "sessions/runTurn",
            {
                "prompt": f"BASH {spawning(marker, hang=False)}",
                "cwd": str(work),
                "provider": "anthropic",
                "tools": ["Bash"],
            },
            timeout=LIVENESS,
        )
        assert "result" in reply, reply
        wait_for(marker, 2)  # the turn is over; its background job and the hidden process still run
        sigkill_then_assert_all_gone(server.proc, marker, "the server")


@pytest.mark.usefixtures("kill_marked")
def test_sigkill_of_a_turn_command_ends_a_hung_bash_and_all_it_started(projects: Path, work: Path, marker: str) -> None:
    sid, _ = new_session(projects, work)
    turn = TurnProcess(projects, work, f"BASH {spawning(marker, hang=True)}", "--resume", sid, "--allow", "Bash")
    try:
        turn.wait_tool()
        wait_for(marker, 3)
        sigkill_then_assert_all_gone(turn.proc, marker, "`session-lsp turn`")
    finally:
        turn.kill()


@pytest.mark.realcli
def test_sigkill_of_a_turn_command_ends_the_real_cli_and_all_it_started(tmp_path: Path, marker: str) -> None:
    """The `claude-cli` provider: the real CLI runs the turn and its own Bash tool; SIGKILL of `session-lsp turn`
    leaves neither the CLI nor anything its Bash started."""
    claude = find_claude()
    if claude is None:
        pytest.skip("REAL CLI NOT AVAILABLE: run scripts/setup.d/claude-cli.sh (or set SESSION_LSP_CLAUDE)")
    work, home, projects = tmp_path / "work", tmp_path / "home", tmp_path / "config" / "projects"
    work.mkdir()
    home.mkdir()
    with ScriptedModelServer(slow_interval=0.0) as model:
        env = {
            **cli_env(projects.parent),
            **provider_env(claude, model.base_url, home, tmp_path / "tmp", PATH=os.environ["PATH"]),
        }
        argv = ["turn", "--new", "--cwd", str(work), "--projects-dir", str(projects), "--provider", "claude-cli"]
        turn = subprocess.Popen(
            [sys.executable, "-m", "server.cli", *argv, "--allow", "Bash", f"BASH {spawning(marker, hang=True)}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env=env,
        )
        try:
            began = time.monotonic()
            while len([p for p in live_with(marker) if p != turn.pid and b"sleep 600" in _argv(p)]) < 3:
                assert turn.poll() is None, turn.stderr.read() if turn.stderr else b""
                assert time.monotonic() - began < 60, f"the CLI's Bash never started: {live_with(marker)}"
                time.sleep(0.1)
            alive = len(live_with(marker)) - 1  # the turn command's own argv holds the marker too
            turn.send_signal(signal.SIGKILL)
            turn.wait()
            deadline = time.monotonic() + LIVENESS
            while live_with(marker) and time.monotonic() < deadline:
                time.sleep(0.05)
            left = [_argv(p)[:80] for p in live_with(marker)]
            assert not left, f"{len(left)} of {alive} marked processes outlived the SIGKILL: {left}"
            print(f"SIGKILL of `session-lsp turn` (claude-cli): {alive} marked processes alive at the kill, none after")
        finally:
            turn.kill()
            for pid in live_with(marker):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def _argv(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return b""
