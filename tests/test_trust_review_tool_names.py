"""Files in a turn's working directory whose names are not valid UTF-8 (a cloned repository, an unpacked archive).
Such a name comes into Python with lone surrogates (`surrogateescape`): LS and Grep gave them to the model as they
were, and the turn died sending the next request (`'utf-8' codec can't encode characters ... surrogates not allowed`,
status 2, no reply), Glob failed outright (RE2 cannot match such a text). The CLI (Node) lists such a name with
U+FFFD in its place: so do our tools now (`server.agent.tools.base.ToolOutput`), and the turn goes on.

Real `session-lsp turn` processes against the scripted test model."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from turnproc import session_lsp

SHOWN = "bad\ufffd\ufffdname.txt"


@pytest.mark.parametrize("prompt", ["LS .", "GLOB **/*.txt", "GREP needle"])
def test_a_tool_meeting_a_name_that_is_not_utf8_shows_it_and_the_turn_goes_on(
    projects: Path, work: Path, prompt: str
) -> None:
    (work / "plain.txt").write_text("needle\n")
    with open(os.path.join(os.fsencode(work), b"bad\x80\xffname.txt"), "wb") as fh:
        fh.write(b"needle here\n")
    os.mkdir(os.path.join(os.fsencode(work), b"dir\xfe"))
    with open(os.path.join(os.fsencode(work), b"dir\xfe", b"inner.txt"), "wb") as fh:
        fh.write(b"needle inside\n")
    where = ["--cwd", str(work), "--projects-dir", str(projects), "--provider", "anthropic"]
    done = session_lsp("turn", "--new", *where, "--json", prompt, config=projects.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    reply = json.loads(done.stdout)
    assert reply["text"] == "I read it (1 tool results).", reply
    path = Path(reply["path"])
    results = [
        block
        for line in path.read_text().splitlines()
        if (row := json.loads(line)).get("type") == "user" and isinstance(row["message"]["content"], list)
        for block in row["message"]["content"]
        if block.get("type") == "tool_result"
    ]
    assert len(results) == 1 and not results[0].get("is_error"), results
    text = json.dumps(results[0]["content"], ensure_ascii=False)
    assert SHOWN in text and "plain.txt" in text, text
    if prompt != "LS .":
        assert "dir\ufffd/inner.txt" in text, text
    checked = session_lsp("check", str(path), config=projects.parent)
    assert checked.returncode == 0 and "0 error(s), 0 warning(s)" in checked.stdout, checked.stdout + checked.stderr
    # and the session goes on: the next turn resumes it
    again = session_lsp("turn", "--resume", reply["sessionId"], *where, "--json", "hello", config=projects.parent)
    assert again.returncode == 0 and json.loads(again.stdout)["text"] == "echo: hello", again.stderr[-2000:]


def test_a_working_directory_that_is_not_utf8_is_refused_in_one_line(projects: Path, tmp_path: Path) -> None:
    """A transcript records the turn's cwd, and the live-session registry names it: a cwd that is not valid UTF-8
    died in a traceback while admitting the session (`orjson`: surrogates not allowed), its lock still held."""
    work = os.path.join(os.fsencode(tmp_path), b"w\x80d")
    os.mkdir(work)
    where = ["--projects-dir", str(projects), "--provider", "anthropic"]
    done = session_lsp("turn", "--new", "--cwd", os.fsdecode(work), *where, "hello", config=projects.parent)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "not valid UTF-8" in lines[0], done.stderr[-2000:]
    assert not list(projects.rglob("*.jsonl"))
    assert not list((projects.parent / "sessions").glob("*.json")) if (projects.parent / "sessions").exists() else True
