"""`session-lsp turn` hung in a tool is stopped by SIGTERM (a process manager, `kill`) and SIGHUP (its terminal
closed) as by Ctrl-C, and `session-lsp serve` by SIGHUP as by SIGTERM: the command it started ends, the
interruption is recorded as the CLI records Esc during a tool call, and the process exits with status 128 + the
signal. Only a liveness bound (LIVENESS seconds)."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from rawlsp import LIVENESS, RawServer
from test_stopping import assert_interrupted_in_tool, hung, start_hung_turn
from turnproc import TurnProcess, commands_with, new_session, wait_gone


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_ends_a_turn_command_hung_in_a_tool(
    projects: Path, work: Path, marker: str, sig: signal.Signals
) -> None:
    """Before, the signal killed `turn` on the spot (status -15, -1): the file ended at the unanswered Bash call."""
    sid, path = new_session(projects, work)
    turn = TurnProcess(projects, work, hung(marker), "--resume", sid, "--allow", "Bash")
    try:
        turn.wait_tool()
        deadline = time.monotonic() + LIVENESS
        while not commands_with(marker):
            assert time.monotonic() < deadline, "the hung command never started"
            time.sleep(0.05)
        turn.proc.send_signal(sig)
        rc, took = turn.wait(LIVENESS)
        assert rc is not None, f"`session-lsp turn` still runs {LIVENESS} s after {sig.name}"
        gone = wait_gone(marker, LIVENESS)
        assert gone is not None, "the hung command outlived the turn"
        print(f"{sig.name}: `turn` ended with status {rc} after {took:.2f} s; the command gone {gone:.2f} s later")
        assert rc == 128 + sig, (rc, turn.stderr[-1500:])
        assert b"(cancelled)" in turn.stderr
        assert_interrupted_in_tool(path)
    finally:
        turn.kill()


def test_sighup_ends_the_server_and_records_the_interruption(projects: Path, work: Path, marker: str) -> None:
    """The terminal a server was started from closed, with a turn hung in a tool: the server ends as at `exit`
    (status 129), the command does not outlive it, and the interruption is recorded. Before, SIGHUP killed the
    server on the spot (status -1) and the file ended at the unanswered Bash call."""
    with RawServer() as server:
        server.initialize(projects, watch=False)
        start_hung_turn(server, work, marker, 0)
        server.proc.send_signal(signal.SIGHUP)
        rc, took = server.wait_exit(LIVENESS)
        assert rc is not None, f"the server still runs {LIVENESS} s after SIGHUP"
        gone = wait_gone(marker, LIVENESS)
        assert gone is not None, "`sleep 600` outlived the server"
        print(f"SIGHUP: the server ended with status {rc} after {took:.2f} s; the command gone {gone:.2f} s later")
        assert rc == 128 + signal.SIGHUP, rc
    (path,) = list(projects.rglob("*.jsonl"))
    assert_interrupted_in_tool(path)
