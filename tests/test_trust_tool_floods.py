"""Tool calls whose work could exhaust the server's memory or outlive the turn: Grep over a file of a million short
matching lines (what it held grew a hundred times the file's size, and a model's response may carry many Greps,
run in parallel), measured as the peak resident memory of a child process running the real tools on real files."""

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
