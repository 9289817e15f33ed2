"""`session-lsp turn` hung in a tool is stopped by SIGTERM (a process manager, `kill`) and SIGHUP (its terminal
closed) as by Ctrl-C, and `session-lsp serve` by SIGHUP as by SIGTERM: the command it started ends, the
interruption is recorded as the CLI records Esc during a tool call, and the process exits with status 128 + the
signal. Only a liveness bound (LIVENESS seconds)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from rawlsp import LIVENESS, RawServer
from realcli import find_claude, run_claude
from scripted_api import ScriptedModelServer
from test_stopping import assert_interrupted_in_tool, start_hung_turn, stop_hung_turn
from turnproc import wait_gone

from storage.recorder import INTERRUPTED_FOR_TOOL_USE


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_ends_a_turn_command_hung_in_a_tool(
    projects: Path, work: Path, marker: str, sig: signal.Signals
) -> None:
    """Before, the signal killed `turn` on the spot (status -15, -1): the file ended at the unanswered Bash call."""
    _, path = stop_hung_turn(projects, work, marker, sig)
    assert_interrupted_in_tool(path)


@pytest.mark.realcli
def test_the_real_cli_resumes_a_turn_stopped_by_sigterm(
    projects: Path, work: Path, marker: str, scripted_model: ScriptedModelServer
) -> None:
    """What a SIGTERM left in the file, the real CLI resumes: it sends the interrupted call and goes on."""
    claude = find_claude()
    if claude is None:
        pytest.skip("REAL CLI NOT AVAILABLE: run scripts/setup.d/claude-cli.sh (or set SESSION_LSP_CLAUDE)")
    sid, _ = stop_hung_turn(projects, work, marker, signal.SIGTERM)
    before = len(scripted_model.requests)
    done = run_claude(
        ["ORACLE", "--resume", sid], cwd=work, config_dir=projects.parent, base_url=scripted_model.base_url
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "echo: ORACLE" in done.stdout
    sent = [r for r in scripted_model.requests[before:] if r["sessionId"] == sid]
    assert sent, "the CLI sent nothing for the session"
    texts = [b.get("text") for m in sent[0]["messages"] if isinstance(m["content"], list) for b in m["content"]]
    assert INTERRUPTED_FOR_TOOL_USE in texts, texts[-6:]
    print(f"the real CLI resumed it: {len(sent[0]['messages'])} messages sent, the interruption among them")


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


LANDS_IN_THE_LOCK = """
import os, signal, threading
from server.agent.cancel import CancelToken
from server.commands.turn import _stopper

token, stopped = CancelToken(), []
signal.signal(signal.{sig}, _stopper(token, stopped))
woken = threading.Event()
token.on_cancel(woken.set)
with token._lock:  # where the main thread is while it registers or drops a request's or a tool call's waker
    os.kill(os.getpid(), signal.{sig})
    sum(range(1000))  # the handler runs here, between two instructions, the lock held
print(token.wait(60), woken.wait(60), stopped == [signal.{sig}], flush=True)
"""


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_landing_while_the_turn_holds_its_cancel_lock_still_cancels_it(sig: str) -> None:
    """`turn`'s main thread takes the cancel token's lock for every model request and tool call (`on_cancel` and
    its unregistering). A stopping signal handled there called `token.cancel()`, which waited for that lock on the
    thread holding it: the turn hung for good (a real process, a real signal; it never printed). Now the handler
    cancels on a thread of its own, which takes the lock once the main thread lets it go."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", LANDS_IN_THE_LOCK.format(sig=sig)],
        capture_output=True,
        text=True,
        timeout=LIVENESS,
        check=False,
    )
    assert (done.returncode, done.stdout.split("\n")) == (0, ["True True True", ""]), done.stderr
