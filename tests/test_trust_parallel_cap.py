"""A response of many read-only tool calls runs at most `MAX_PARALLEL` (10, as the CLI) of them at once: before,
every call of a batch got its thread at once, so a model asking for 40 Greps of large files had 60 threads each
holding its file's lines. Real tools on real files; the calls' threads are counted while they run."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from server.agent.tools import ToolContext, make_tools
from server.agent.tools.runner import MAX_PARALLEL, ToolCall, batches, run_calls

CALLS = 40


def test_many_read_only_calls_run_ten_at_a_time(tmp_path: Path) -> None:
    for i in range(CALLS):
        (tmp_path / f"f{i}.txt").write_text("needle in a haystack line\n" * 20_000)  # ~0.5 MB: each Grep takes a while
    calls = [
        ToolCall(str(i), "Grep", {"pattern": "needle", "path": f"f{i}.txt", "output_mode": "count"})
        for i in range(CALLS)
    ]
    tools = make_tools()
    seen = [0]
    done = threading.Event()

    def count() -> None:
        while not done.is_set():
            seen[0] = max(seen[0], sum(1 for t in threading.enumerate() if t.name.startswith("tool-Grep-")))
            time.sleep(0.001)

    counter = threading.Thread(target=count, daemon=True)
    counter.start()
    try:
        out = run_calls(calls, tools, ToolContext(tmp_path))
    finally:
        done.set()
        counter.join()
    assert list(out) == [c.id for c in calls]  # every result, in the order asked
    assert all(not o.is_error and "20000" in o.content for o in out.values()), next(iter(out.values())).content
    assert 1 < seen[0] <= MAX_PARALLEL == 10, seen[0]


def test_a_writer_still_splits_the_read_only_runs(tmp_path: Path) -> None:
    tools = make_tools(["all"])
    reads = [ToolCall(f"r{i}", "Read", {"file_path": "x"}) for i in range(25)]
    write = ToolCall("w", "Write", {"file_path": "y", "content": ""})
    sizes = [len(b) for b in batches([*reads, write, *reads[:3]], tools)]
    assert sizes == [10, 10, 5, 1, 3]
