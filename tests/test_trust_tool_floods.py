"""Tool calls whose work could exhaust the server's memory or outlive the turn: Grep over a file of a million short
matching lines (what it held grew a hundred times the file's size, and a model's response may carry many Greps,
run in parallel), measured as the peak resident memory of a child process running the real tools on real files;
Grep over minified files whose one line matches everywhere, which ran into its timeout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import child_json
from scripted_api import ScriptedModelServer, plan_reply, scripted_provider

from server.agent.loop import run_turn
from server.agent.request import TurnRequest
from server.agent.tools.read import MAX_BYTES

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
    answer = child_json(PEAK, [str(root), calls], HANG)
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


def read_wide(messages: list[Any]) -> tuple[str, list[dict[str, Any]]]:
    """The scripted model, but `WIDE <path>` asks for a Read of the file's first 2000 lines (`offset`/`limit`, which
    lift the whole-file size check)."""
    last = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
    text = last if isinstance(last, str) else " ".join(str(b.get("text", "")) for b in last if b.get("type") == "text")
    word, _, path = text.strip().partition(" ")
    if word == "WIDE":
        return "normal", [
            {"type": "tool_use", "id": "", "name": "Read", "input": {"file_path": path, "offset": 1, "limit": 2000}}
        ]
    return plan_reply(messages)


def test_a_read_of_long_lines_puts_no_more_in_the_conversation_than_a_whole_file_read(tmp_path: Path) -> None:
    """A file of 2000 lines of 8 KB (a log, minified chunks): shown through `offset`/`limit`, each line cut at 2000
    characters, it was 2 MB sent to the model (half a million tokens: the session could never be continued) and a
    10 MB row in the transcript. What one Read shows is bounded as a whole-file Read is (`read.MAX_BYTES`)."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "wide.log").write_bytes((b"y" * 7999 + b"\n") * 2000)
    with ScriptedModelServer(planner=read_wide) as model:
        request = TurnRequest(prompt="WIDE wide.log", projects_dir=tmp_path / "projects", cwd=str(work))
        result = run_turn(request, on_event=lambda e: None, provider=scripted_provider(base_url=model.base_url))
        sent = [json.dumps(r["messages"]) for r in model.requests]
    written = Path(result.path).read_bytes().splitlines()
    results = [row for row in map(json.loads, written) if "toolUseResult" in row]
    assert len(results) == 1 and results[0]["toolUseResult"]["file"]["startLine"] == 1
    shown = str(results[0]["message"]["content"][0]["content"])
    assert shown.startswith("1\t" + "y" * 2000 + "\n2\t"), shown[:100]
    print(f"one Read: {len(shown)} characters to the model, {max(map(len, written))} bytes the longest row")
    assert len(shown) <= MAX_BYTES + 8 * 2000, len(shown)  # before: 2,103,186
    assert max(map(len, written)) <= 3 * MAX_BYTES  # before: 10,496,680
    assert max(map(len, sent)) <= 3 * MAX_BYTES
