"""Stopping a Bash call whose command keeps starting processes that leave the tree: a loop that starts
`setsid` shells in the background as fast as it can. Each one's parent (a subshell) exits at once, so it is the
supervisor's child (a subreaper) only until the supervisor goes. Stopping the call used to take one snapshot of
the tree and then SIGKILL the supervisor with its group: whatever started between the snapshot and that kill was
handed to init, out of reach, and ran on (4 to 57 shells of 3 runs). The tree is now killed below a supervisor
still alive, round after round, before the supervisor. Timed out through the tool runner, and cancelled through
the real server over stdio; the only bound is a liveness one."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from rawlsp import LIVENESS, RawServer
from turnproc import commands_with, wait_gone

from server.agent.tools import ToolContext, make_tools
from server.agent.tools.runner import ToolCall, run_calls

REQUEST_CANCELLED = -32800


def spawning(marker: str) -> str:
    """A command that starts shells holding `marker` in sessions of their own, without end."""
    return f"while :; do (setsid bash -c 'sleep 600; : {marker}' &); done"


@pytest.mark.parametrize("run", range(3))
def test_a_timeout_ends_every_process_a_spawning_loop_started(work: Path, marker: str, run: int) -> None:
    call = ToolCall("b", "Bash", {"command": spawning(marker), "timeout": 1500})
    out = run_calls([call], make_tools(["Bash"]), ToolContext(work))
    assert out["b"].is_error and "timed out after 1500 ms" in out["b"].content, out["b"].content
    gone = wait_gone(marker, LIVENESS)
    assert gone is not None, f"{len(commands_with(marker))} still running after the timeout"


def test_a_cancel_ends_every_process_a_spawning_loop_started(server: RawServer, work: Path, marker: str) -> None:
    server.request(
        "sessions/runTurn",
        {"prompt": f"BASH {spawning(marker)}", "cwd": str(work), "provider": "anthropic", "tools": ["Bash"]},
        msg_id="spawning",
    )
    began = time.monotonic()
    while len(commands_with(marker)) < 20:
        assert time.monotonic() - began < LIVENESS, "the command never started its shells"
        time.sleep(0.05)
    server.notify("$/cancelRequest", {"id": "spawning"})
    reply = server.answer("spawning", timeout=LIVENESS)
    assert reply.get("error", {}).get("code") == REQUEST_CANCELLED, reply
    gone = wait_gone(marker, LIVENESS)
    assert gone is not None, f"{len(commands_with(marker))} still running after the cancel"


def test_a_command_that_kills_its_supervisor_does_not_run_on(work: Path, marker: str) -> None:
    """The command kills the supervisor holding it, then goes on: before, the call returned at once (exit -9) and
    the command ran on in its process group, held by no one (no timeout, cancel or exit of session-lsp reached it).
    Run in-process (no `contain()`), what it started with `setsid` first is out of reach: only the command's session
    is ended (`serve` and `turn` end the rest: `test_trust_review_supervisor_killed.py`)."""
    command = f"kill -9 $PPID; bash -c 'sleep 600; : {marker}'; sleep 600; : {marker}"
    out = run_calls(
        [ToolCall("b", "Bash", {"command": command, "timeout": 600_000})], make_tools(["Bash"]), ToolContext(work)
    )
    assert out["b"].is_error, out["b"].content
    gone = wait_gone(marker, LIVENESS)
    assert gone is not None, f"{len(commands_with(marker))} still running after the call returned"
