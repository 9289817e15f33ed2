"""The real server over stdio, its watcher's inotify queue overflowed: the events the kernel dropped are not lost
to the index.

The server is stopped (SIGSTOP) so its watcher reads no event while 40,000 writes alternate between two files of
the projects folder (more than `fs.inotify.max_queued_events`, 16,384 by default: the kernel drops the rest and
queues IN_Q_OVERFLOW), then a line is appended to a session and the server continued. Before, the append's
event was among those dropped and nothing read the folder again: the server answered `workspace/diagnostic`
without the appended line's `invalid-json` for as long as it ran (still so 30 s later). Now the lost events make
the watcher read the whole folder again, and the server's answer is what a fresh `session-lsp check --json` gives.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from conftest import age
from rawlsp import ROOT, RawServer

SHOP = "-Users-me-shop"
S1 = "11111111-1111-4111-8111-111111111111"
WRITES = 40_000
"""More than twice the kernel's default queue (`fs.inotify.max_queued_events`), one event each."""
SETTLE = 30.0
"""A hang detector: the index that has not caught up by then never will."""


def fresh_check(projects: Path, *, cached: bool = False) -> list[tuple[str, int, str]]:
    """(path, 0-based line, code) of every finding, as a `check --json` without any cache gives them (with `cached`,
    through the persistent index, as this test's environment has it)."""
    env = {**os.environ} if cached else {**os.environ, "SESSION_LSP_NO_CACHE": "1"}
    out = subprocess.run(
        [sys.executable, "-m", "server.cli", "check", "--json", "--projects-dir", str(projects)],
        capture_output=True, check=False, cwd=ROOT, env=env,
    )  # fmt: skip
    return sorted((d["path"], d["line"] - 1, d["code"]) for d in json.loads(out.stdout))


def served(server: RawServer) -> list[tuple[str, int, str]]:
    items: list[dict[str, Any]] = server.call("workspace/diagnostic", {"previousResultIds": []})["result"]["items"]
    return sorted(
        (item["uri"].removeprefix("file://"), d["range"]["start"]["line"], d["code"])
        for item in items
        for d in item["items"]
    )


def wait_indexed(server: RawServer) -> None:
    """Until the first index is complete and watched (the server says so with an empty `sessions/didChange`)."""
    deadline = time.monotonic() + 60
    while not any(n["method"] == "sessions/didChange" for n in list(server.notifications)):
        assert time.monotonic() < deadline, f"no sessions/didChange; stderr: {server.stderr[-2000:]!r}"
        time.sleep(0.05)


def test_events_the_kernel_dropped_are_read_again(corpus_projects: Path) -> None:
    age(corpus_projects)
    session = corpus_projects / SHOP / f"{S1}.jsonl"
    with RawServer() as server:
        server.initialize(corpus_projects)
        wait_indexed(server)
        assert served(server) == [] == fresh_check(corpus_projects)

        os.kill(server.proc.pid, signal.SIGSTOP)
        try:
            noise = [
                os.open(corpus_projects / SHOP / f"noise-{i}.txt", os.O_WRONLY | os.O_CREAT, 0o600) for i in (0, 1)
            ]
            for n in range(WRITES):  # alternating: the kernel merges only an event equal to the last one queued
                os.write(noise[n % 2], b"x")
            for fd in noise:
                os.close(fd)
            with session.open("ab") as fh:
                fh.write(b"{not json\n")
        finally:
            os.kill(server.proc.pid, signal.SIGCONT)

        want = fresh_check(corpus_projects)
        assert (str(session), session.read_bytes().count(b"\n") - 1, "invalid-json") in want
        deadline = time.monotonic() + SETTLE
        got = served(server)
        while got != want and time.monotonic() < deadline:
            time.sleep(0.5)
            got = served(server)
        assert got == want, server.stderr[-2000:]
        assert server.proc.poll() is None
