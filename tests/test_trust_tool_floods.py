"""Tool calls whose work could exhaust the server's memory or outlive the turn: Grep over a file of a million short
matching lines (what it held grew a hundred times the file's size, and a model's response may carry many Greps,
run in parallel), measured as the peak resident memory of a child process running the real tools on real files;
Grep over minified files whose one line matches everywhere, which ran into its timeout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HANG = 120.0
PEAK = (
    "import json, resource, sys\n"
    "from pathlib import Path\n"
    "from server.agent.tools import ToolContext, make_tools\n"
    "from server.agent.tools.runner import ToolCall, run_calls\n"
    "root, calls = json.loads(sys.argv[1])\n"
    "tools = make_tools(())\n"
    "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
    "out = {}\n"
    "for c in calls:\n"
    "    out.update(run_calls([ToolCall(c['id'], c['name'], c['input'])], tools, ToolContext(Path(root))))\n"
    "grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before\n"
    "print(json.dumps({'grown_kib': grown, 'out': {k: [v.content, v.is_error] for k, v in out.items()}}))\n"
)


def peak_of(root: Path, calls: list[dict[str, object]]) -> tuple[int, dict[str, list[object]]]:
    done = subprocess.run(
        [sys.executable, "-c", PEAK, json.dumps([str(root), calls])],
        capture_output=True,
        text=True,
        timeout=HANG,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout)
    return int(answer["grown_kib"]), answer["out"]


def test_grep_holds_no_more_than_it_answers_over_a_million_matching_lines(tmp_path: Path) -> None:
    lines = 1024 * 1024 - 1
    (tmp_path / "short.txt").write_bytes(b"x\n" * lines)  # 2 MiB: Grep's largest file
    calls: list[dict[str, object]] = [
        {"id": "count", "name": "Grep", "input": {"pattern": "x", "output_mode": "count"}},
        {"id": "files", "name": "Grep", "input": {"pattern": "x"}},
        {"id": "content", "name": "Grep", "input": {"pattern": "x", "output_mode": "content", "head_limit": 10**9}},
    ]
    grown, out = peak_of(tmp_path, calls)
    print(f"Grep over {lines} matching lines: peak resident memory grew {grown // 1024} MiB")
    assert out["count"] == [f"{tmp_path}/short.txt:{lines}", False]
    assert out["files"] == [f"Found 1 file\n{tmp_path}/short.txt", False]
    content, failed = out["content"]
    assert not failed and str(content).startswith(f"{tmp_path}/short.txt:x\n") and "characters truncated" in content
    assert grown < 48 * 1024, grown  # before: 287 MiB more for this 2 MiB file


def test_grep_over_minified_lines_matching_everywhere_answers(tmp_path: Path) -> None:
    """A match is found once a line: before, one per character of a 2 MiB line that matches everywhere (seven
    seconds a file here), so a Grep over ten such bundles ran into its 60 s timeout and answered nothing."""
    from server.agent.tools import ToolContext, make_tools
    from server.agent.tools.runner import ToolCall, run_calls

    for n in range(10):
        (tmp_path / f"bundle{n}.min.js").write_bytes(b"a" * (2 * 1024 * 1024 - 16) + b"\n")
    calls = [
        ToolCall("content", "Grep", {"pattern": "a", "output_mode": "content", "-n": True}),
        ToolCall("count", "Grep", {"pattern": "a", "output_mode": "count"}),
    ]
    out = run_calls(calls, make_tools(()), ToolContext(tmp_path))
    assert not out["content"].is_error, out["content"].content  # before: "Grep timed out after 60 s"
    lines = out["content"].content.splitlines()
    assert [line.split(":")[0] for line in lines] == [str(tmp_path / f"bundle{n}.min.js") for n in range(10)]
    assert all(":1:aaaa" in line and "more characters" in line for line in lines)
    assert out["count"].content.splitlines() == [f"{tmp_path}/bundle{n}.min.js:1" for n in range(10)]
