"""A long-running server keeps a bounded number of threads. Counted in /proc for a real server over stdio, after
turns whose Bash calls leave a background job running (the job holds the call's output pipes, and its supervisor
stays while it runs). Only liveness bounds."""

from __future__ import annotations

import os
import time
from pathlib import Path

from rawlsp import LIVENESS, RawServer
from turnproc import commands_with, wait_gone

JOBS = 8


def threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def settled(pid: int, at_most: int) -> int:
    """The thread count once it is at most `at_most` (threads of finished work end soon after), else the count
    after LIVENESS seconds."""
    deadline = time.monotonic() + LIVENESS
    n = threads(pid)
    while n > at_most and time.monotonic() < deadline:
        time.sleep(0.05)
        n = threads(pid)
    return n


def leave_a_job(server: RawServer, work: Path, marker: str, n: int) -> None:
    command = f"bash -c 'sleep 600; echo {marker} {n}' & echo started {n}"
    reply = server.call(
        "sessions/runTurn",
        {"prompt": f"BASH {command}", "cwd": str(work), "provider": "anthropic", "tools": ["Bash"]},
        timeout=LIVENESS * 3,
    )
    assert "result" in reply, reply


def test_background_jobs_of_many_turns_hold_no_thread_each(projects: Path, work: Path, marker: str) -> None:
    """Before, each such call left three threads for as long as its job ran (two reading its output, one waiting
    for its supervisor): 24 more threads after 8 calls."""
    with RawServer() as server:
        server.initialize(projects, watch=False)
        pid = server.proc.pid
        idle = threads(pid)
        leave_a_job(server, work, marker, 0)  # the first one starts what every turn shares
        first = settled(pid, idle + 2)
        for n in range(1, JOBS + 1):
            leave_a_job(server, work, marker, n)
        after = settled(pid, first + 1)
        jobs = len(commands_with(marker))
        print(
            f"threads: {idle} idle, {first} after one call leaving a job, {after} after {JOBS} more; {jobs} jobs running"
        )
        assert jobs >= JOBS + 1, f"only {jobs} of {JOBS + 1} background jobs run"
        assert after <= first + 1, f"{after - first} more threads after {JOBS} calls leaving a job running"
        server.notify("exit")
        rc, _ = server.wait_exit(LIVENESS)
        assert rc is not None
    assert wait_gone(marker, LIVENESS) is not None, "background jobs outlived the server"
