"""Stopping a Bash call for good when its command hides a process: a subshell starts `setsid` in the
background and exits, so the process is in a session of its own and its parent is gone before the
call is stopped (no process group, no parent chain leads to it). Cancelled through the real server
over stdio, and timed out through the tool runner; the only bound is a liveness one."""

from __future__ import annotations

import time
from pathlib import Path

from rawlsp import LIVENESS, RawServer
from turnproc import commands_with, wait_gone

from server.agent.tools import ToolContext, make_tools
from server.agent.tools.runner import ToolCall, run_calls

REQUEST_CANCELLED = -32800


def hiding(marker: str) -> str:
    """A command that hides one process holding `marker`, then hangs itself."""
    return f"(setsid bash -c 'sleep 600; echo {marker} hidden' &); sleep 600; echo {marker} shell"


def wait_for(marker: str, count: int) -> None:
    began = time.monotonic()
    while len(commands_with(marker)) < count:
        assert time.monotonic() - began < LIVENESS, "the command never started both processes"
        time.sleep(0.05)


def test_cancel_ends_a_process_that_left_the_tree(server: RawServer, work: Path, marker: str) -> None:
    server.request(
        "sessions/runTurn",
        {"prompt": f"BASH {hiding(marker)}", "cwd": str(work), "provider": "anthropic", "tools": ["Bash"]},
        msg_id="hiding",
    )
    wait_for(marker, 2)
    server.notify("$/cancelRequest", {"id": "hiding"})
    reply = server.answer("hiding", timeout=LIVENESS)
    assert reply.get("error", {}).get("code") == REQUEST_CANCELLED, reply
    gone = wait_gone(marker, LIVENESS)
    assert gone is not None, f"still running after the cancel: {commands_with(marker)}"
    print(f"every process of the command was gone {gone:.2f} s after the cancel was answered")


def test_timeout_ends_a_process_that_left_the_tree(work: Path, marker: str) -> None:
    call = ToolCall("b", "Bash", {"command": hiding(marker), "timeout": 1500})
    out = run_calls([call], make_tools(["Bash"]), ToolContext(work))
    assert out["b"].is_error and "timed out after 1500 ms" in out["b"].content, out["b"].content
    gone = wait_gone(marker, LIVENESS)
    assert gone is not None, f"still running after the timeout: {commands_with(marker)}"
