"""Tool calls whose input or output could exhaust the server's memory: a Read of a few lines of a file
far larger than memory (`offset`/`limit` lift the whole-file size check), an Edit of such a file or
one whose `replace_all` would grow it beyond bound, a Grep over minified files. The large files are
sparse (4 GiB that take no disk); the tools run in a child process whose address space is capped at
1 GiB, so holding such a file whole fails there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import child_json

HANG = 60.0
CHILD = (
    "import json, resource, sys\n"
    "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
    "from pathlib import Path\n"
    "from server.agent.tools import ToolContext, make_tools\n"
    "from server.agent.tools.runner import ToolCall, run_calls\n"
    "root, calls = json.loads(sys.argv[1])\n"
    "tools = make_tools(['Edit'])\n"
    "out = run_calls([ToolCall(c['id'], c.get('name', 'Read'), c['input']) for c in calls], tools, ToolContext(Path(root)))\n"
    "print(json.dumps({k: {'content': v.content, 'is_error': v.is_error, 'extra': v.extra} for k, v in out.items()}))\n"
)


def read_in_child(root: Path, calls: list[dict[str, Any]]) -> dict[str, Any]:
    answer: dict[str, Any] = child_json(CHILD, [str(root), calls], HANG)
    return answer


def test_read_with_offset_and_limit_reads_only_what_it_shows(tmp_path: Path) -> None:
    big = tmp_path / "huge.log"
    with big.open("wb") as fh:
        fh.write(b"".join(b"line %d of the log\n" % n for n in range(1, 1001)))  # past the binary probe
        fh.truncate(4 << 30)  # sparse: 4 GiB that take no disk
    out = read_in_child(
        tmp_path,
        [
            {"id": "head", "input": {"file_path": "huge.log", "offset": 3, "limit": 2}},
            {"id": "whole", "input": {"file_path": "huge.log"}},
        ],
    )
    assert out["head"]["is_error"] is False, out["head"]
    assert out["head"]["content"] == "3\tline 3 of the log\n4\tline 4 of the log"
    assert out["head"]["extra"]["file"]["content"] == "line 3 of the log\nline 4 of the log"
    assert out["whole"]["is_error"] and "exceeds maximum allowed size" in out["whole"]["content"]


def test_grep_output_stays_small_on_long_matching_lines(tmp_path: Path) -> None:
    """Minified files: one line of 1 MiB each that matches. What Grep answers goes to the model and
    into the transcript, so it is bounded (lines cut, the whole cut) whatever the files hold."""
    from server.agent.tools import ToolContext, make_tools
    from server.agent.tools.runner import ToolCall, run_calls

    for n in range(20):
        (tmp_path / f"bundle{n}.min.js").write_text("var a=1;" * (128 * 1024) + f"function needle{n}(){{}}\n")
    calls = [
        ToolCall("content", "Grep", {"pattern": "needle", "output_mode": "content", "-n": True}),
        ToolCall("files", "Grep", {"pattern": "needle"}),
    ]
    out = run_calls(calls, make_tools(()), ToolContext(tmp_path))
    content = out["content"].content
    print(f"Grep content answer: {len(content)} characters for 20 matching lines of 1 MiB")
    assert len(content) <= 30_000, len(content)
    lines = content.splitlines()
    assert len(lines) == 20 and all(line.startswith(str(tmp_path / "bundle")) for line in lines), lines[:1]
    assert all("more characters" in line for line in lines)
    assert out["files"].content.splitlines()[0] == "Found 20 files"


def test_edit_refuses_a_file_or_a_result_too_large_to_hold(tmp_path: Path) -> None:
    huge = tmp_path / "huge.txt"
    with huge.open("wb") as fh:
        fh.write(b"x = 1\n")
        fh.truncate(4 << 30)
    many = tmp_path / "many.txt"
    many.write_bytes(b"a" * (1 << 20))
    out = read_in_child(
        tmp_path,
        [
            {"id": "huge", "name": "Edit", "input": {"file_path": "huge.txt", "old_string": "x", "new_string": "y"}},
            {
                "id": "grow",
                "name": "Edit",
                "input": {"file_path": "many.txt", "old_string": "a", "new_string": "b" * 2048, "replace_all": True},
            },
        ],
    )
    for name in ("huge", "grow"):
        assert out[name]["is_error"] and "too large" in out[name]["content"], (name, out[name])
    assert many.read_bytes() == b"a" * (1 << 20) and huge.stat().st_size == 4 << 30
