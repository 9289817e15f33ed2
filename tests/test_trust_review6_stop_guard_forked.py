"""A worker forked while a writer's guard lives does not keep the guard, nor its writer's release, waiting.

A process that writes a second session at once (the language server, two turns) registers it in the CLI's registry
under a guard child (`storage.livesession.LiveMark`), which ends when the end of its standard input closes: on
`release()`, or when the writer dies by any signal. The index's worker processes are forked from the server while
turns run (`server.index.workerpool`), and each kept a copy of that pipe's write end: `release()` waited its whole
5 s for the guard, which then ran on for as long as the workers did (before: release 5.0 s, the guard alive after).

Real processes: the writer is a child Python holding two registrations, its workers forked by the product's pool.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rawlsp import LIVENESS
from turnproc import ROOT

WRITER = """
import json, os, sys, time
from pathlib import Path
from storage.livesession import LiveMark
from server.index.workerpool import forking, worker_pool

config = Path(sys.argv[1])
first = LiveMark("aaaaaaaa-0000-4000-8000-000000000001", "/tmp", config_dir=config)
first.acquire()
second = LiveMark("bbbbbbbb-0000-4000-8000-000000000002", "/tmp", config_dir=config)
second.acquire()  # under a guard: this process holds a registration already
guard = second.guard.pid


def state(pid):
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


class Done(Exception):
    pass


try:
    with worker_pool(2) as pool:
        with forking():
            busy = [pool.submit(time.sleep, 60) for _ in range(2)]
        began = time.monotonic()
        second.release()
        took = time.monotonic() - began
        deadline = time.monotonic() + 2
        while state(guard) not in ("gone", "Z") and time.monotonic() < deadline:
            time.sleep(0.01)
        print(json.dumps({"release": took, "guard": state(guard)}), flush=True)
        raise Done  # the workers are killed, not waited for
except Done:
    pass
first.release()
"""


def test_a_forked_worker_keeps_no_guard_waiting(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", WRITER, str(tmp_path / "config")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=LIVENESS * 3,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout)
    print(f"release took {found['release']:.2f} s with two workers forked; the guard then: {found['guard']}")
    assert found["guard"] in ("gone", "Z"), "the guard outlived its release, held by the workers"
    assert found["release"] < 2.0, "the release waited for a guard the workers kept"
