"""The claude-cli provider's reading of the CLI's output (`claude_cli._lines`): every line, however the chunks cut
it, and an end `DRAIN_S` after the CLI's own end even while what it left running keeps writing to the pipe."""

from __future__ import annotations

import queue
import subprocess
import threading
import time

import pytest

import server.agent.providers.claude_cli as claude_cli


class _Run:
    """The supervised CLI: ended once `end` is set."""

    def __init__(self) -> None:
        self.end = threading.Event()

    def wait(self, timeout: float | None = None) -> int:
        if not self.end.wait(timeout):
            raise subprocess.TimeoutExpired("claude", timeout or 0)
        return 0


def test_every_line_whatever_the_chunks() -> None:
    chunks: queue.SimpleQueue[bytes] = queue.SimpleQueue()
    ended, run = threading.Event(), _Run()
    data = b'{"a":1}\n' + "é".encode() * 3 + b"\n\nlast"
    for i in range(0, len(data), 3):
        chunks.put(data[i : i + 3])
    ended.set()
    run.end.set()
    assert list(claude_cli._lines(chunks, ended, run)) == ['{"a":1}', "ééé", "", "last"]  # type: ignore[arg-type]


def test_the_output_ends_drain_s_after_the_cli_though_a_job_keeps_writing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A job the CLI's Bash left writes to the CLI's stdout more often than the reader polls: the reader never saw
    the queue empty, so never looked whether the CLI had ended, and the turn went on as long as the job (here:
    stopped by the test after 10 s)."""
    monkeypatch.setattr(claude_cli, "DRAIN_S", 0.3)
    chunks: queue.SimpleQueue[bytes] = queue.SimpleQueue()
    ended, run, stop = threading.Event(), _Run(), threading.Event()

    def job() -> None:
        chunks.put(b'{"type":"result","result":"ok"}\n')
        run.end.set()  # the CLI ended; what it left writes on
        deadline = time.monotonic() + 10
        while not stop.is_set() and time.monotonic() < deadline:
            chunks.put(b"still here\n")
            time.sleep(0.005)
        ended.set()

    threading.Thread(target=job, daemon=True).start()
    began = time.monotonic()
    try:
        lines = []
        for line in claude_cli._lines(chunks, ended, run):  # type: ignore[arg-type]
            lines.append(line)
        took = time.monotonic() - began
    finally:
        stop.set()
    assert lines[0] == '{"type":"result","result":"ok"}'
    assert took < 5, f"read the job's output for {took:.1f} s after the CLI ended"
