"""No control character from a transcript or a file name reaches the terminal (`storage/terminaltext.py`).

The real `session-lsp` command line runs on a projects folder whose transcripts carry an OSC 52 (sets the
clipboard), a clear-screen CSI, a window-title OSC, a C1 CSI, DEL, backspace, a carriage return, bidirectional
overrides and isolates, a zero-width space and a newline followed by a forged line, in every field a command shows:
first prompt, last prompt, AI title, summary, custom title (set by `rename`), tag, cwd, git branch, forked-from id,
subagent type, model, tool name, tool input, tool result, assistant text, row ids quoted in diagnostics, the
project folder's name and a subfolder's (every path), and in the arguments an error quotes. What it prints (stdout
and stderr, as bytes) must hold none of those characters, and each field must still be shown, written out as
`⟨U+001B⟩`. Before the fix every one of these commands wrote the ESC, BEL, C1 and override bytes out as they were.
JSON output stays exact.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

import orjson
import pytest

from storage.paths import project_folder_name
from storage.terminaltext import escape, one_line

SESSION_LSP = Path(sys.executable).parent / "session-lsp"

HEAD = "\x1b]52;c;ZXZpbA==\x07\x1b[2J\x1b]0;PWNED\x07\u202e\x9b31m\x7f\x08\u2066\u200b\u061c\ufeff"
"""The attack, with no whitespace in it (tool inputs and snippets have their whitespace folded)."""
SHOWN = (
    "⟨U+001B⟩]52;c;ZXZpbA==⟨U+0007⟩⟨U+001B⟩[2J⟨U+001B⟩]0;PWNED⟨U+0007⟩⟨U+202E⟩⟨U+009B⟩31m⟨U+007F⟩⟨U+0008⟩"
    "⟨U+2066⟩⟨U+200B⟩⟨U+061C⟩⟨U+FEFF⟩"
)
"""`HEAD` as a terminal must be given it."""
TAIL = "\r\nFAKE forged line"
"""What a one-line field must not turn into a line of its own."""

FORBIDDEN = (
    {chr(c) for c in range(0x20) if chr(c) not in "\n\t"}
    | {"\x7f"}
    | {chr(c) for c in range(0x80, 0xA0)}
    | set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200b\u200c\u200d\u200e\u200f\u2028\u2029")
    | set("\ufeff\u061c\u00ad\u2060\u2061\u2062\u2063\u2064\U000e0001")
)
"""What no terminal output may hold raw (written out independently of the rule under test)."""

SID_A = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
SID_B = "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"
SID_C = "cccccccc-cccc-4ccc-8ccc-cccccccccccc"
SID_D = "dddddddd-dddd-4ddd-8ddd-dddddddddddd"
EVIL_FOLDER = "-tmp-evil\x1b]0;FOLDER\x07\u202e"
SUBFOLDER = "deep\x1b[2J\x9b"


def field(name: str) -> str:
    """The value a one-line field carries: its name, the attack, then a forged line."""
    return f"{name}-{HEAD}{TAIL}"


def shown(name: str) -> str:
    return f"{name}-{SHOWN}"


def _row(sid: str, n: int, **kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "isSidechain": False,
        "userType": "external",
        "cwd": field("cwd"),
        "sessionId": sid,
        "version": "2.1.328",
        "gitBranch": field("branch"),
        "timestamp": f"2026-01-01T00:00:{n:02d}.000Z",
    }
    return base | kw


def _user(sid: str, n: int, parent: str | None, content: Any, **kw: Any) -> dict[str, Any]:
    kw.setdefault("uuid", f"{sid[:8]}-u{n}")
    return _row(sid, n, type="user", parentUuid=parent, message={"role": "user", "content": content}, **kw)


def _assistant(sid: str, n: int, parent: str, content: list[Any], model: str = "claude-opus-4-5") -> dict[str, Any]:
    message = {
        "role": "assistant",
        "id": f"msg_{sid[:8]}_{n}",
        "type": "message",
        "model": model,
        "content": content,
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 4},
    }
    return _row(sid, n, type="assistant", parentUuid=parent, uuid=f"{sid[:8]}-u{n}", message=message)


def _write(path: Path, rows: list[Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))


def build(projects: Path) -> dict[str, Path]:
    """The hostile projects folder; the files by name."""
    folder = projects / EVIL_FOLDER
    a = folder / f"{SID_A}.jsonl"  # title from its summary; a tool call and result; a bad line
    tool_use = {"type": "tool_use", "id": "toolu_1", "name": field("tool"), "input": {"cmd": field("input")}}
    _write(
        a,
        [
            _user(
                SID_A,
                1,
                None,
                f"prompt-{HEAD}\nsecond body line",
                forkedFrom={"sessionId": field("forkof"), "messageUuid": "x"},
            ),
            _assistant(
                SID_A, 2, f"{SID_A[:8]}-u1", [{"type": "text", "text": f"reply-{HEAD}"}, tool_use], field("model")
            ),
            _user(
                SID_A,
                3,
                f"{SID_A[:8]}-u2",
                [{"type": "tool_result", "tool_use_id": "toolu_1", "content": field("result")}],
            ),
            _assistant(SID_A, 4, f"{SID_A[:8]}-u3", [{"type": "text", "text": f"done-{HEAD}\nbody line 2"}]),
            f"not json {HEAD}",
            {"type": "summary", "summary": field("summary"), "leafUuid": f"{SID_A[:8]}-u4"},
            {"type": "tag", "tag": field("tag"), "sessionId": SID_A},
        ],
    )
    b = folder / f"{SID_B}.jsonl"  # title from its AI title; row ids quoted in diagnostics; a subagent
    _write(
        b,
        [
            _user(SID_B, 1, None, f"first-{HEAD}"),
            _assistant(SID_B, 2, f"{SID_B[:8]}-u1", [{"type": "text", "text": "ok"}]),
            _user(
                SID_B, 3, f"{SID_B[:8]}-u2", [{"type": "tool_result", "tool_use_id": field("orphan"), "content": "r"}]
            ),
            _user(SID_B, 4, f"{SID_B[:8]}-u3", "again", uuid=field("dup")),
            _user(SID_B, 5, f"{SID_B[:8]}-u3", "again", uuid=field("dup")),
            {"type": "ai-title", "aiTitle": field("aititle"), "sessionId": SID_B},
        ],
    )
    agent = folder / SID_B / "subagents" / "agent-a1.jsonl"
    _write(agent, [_user(SID_B, 1, None, "sub task", isSidechain=True, agentId="a1")])
    agent.with_name("agent-a1.meta.json").write_text(json.dumps({"agentType": field("agenttype")}))
    c = folder / f"{SID_C}.jsonl"  # title from its last prompt
    _write(
        c,
        [
            _user(SID_C, 1, None, "hello"),
            _assistant(SID_C, 2, f"{SID_C[:8]}-u1", [{"type": "text", "text": "hi"}]),
            {
                "type": "last-prompt",
                "lastPrompt": field("lastprompt"),
                "leafUuid": f"{SID_C[:8]}-u2",
                "sessionId": SID_C,
            },
        ],
    )
    d = folder / SUBFOLDER / f"{SID_D}.jsonl"  # a session file in a subfolder whose name holds an ESC and a C1
    _write(d, [_user(SID_D, 1, None, "deep one", cwd="/tmp"), f"{{broken {HEAD}"])
    return {"a": a, "b": b, "c": c, "d": d, "agent": agent}


def run(*args: str, env: dict[str, str] | None = None, status: int | tuple[int, ...] = 0) -> str:
    """stdout and stderr of the real command line, checked byte for byte, as text."""
    proc = subprocess.run([str(SESSION_LSP), *args], capture_output=True, timeout=120, env=env)
    out = proc.stdout + b"\n" + proc.stderr
    text = out.decode("utf-8")
    raw = sorted({f"U+{ord(ch):04X}" for ch in text if ch in FORBIDDEN})
    assert not raw, f"{args[0]} printed raw {raw}:\n{text}"
    assert proc.returncode in (status if isinstance(status, tuple) else (status,)), text
    return text


def assert_one_line(text: str, *names: str) -> None:
    """Each field is shown, written out, and its newline did not start a line."""
    for name in names:
        assert shown(name) in text, f"{name} not shown escaped:\n{text}"
    assert not any(line.startswith("FAKE") for line in text.splitlines()), text
    assert "⟨U+000D⟩⟨U+000A⟩FAKE" in text


@pytest.fixture
def evil(projects: Path) -> dict[str, Path]:
    return build(projects)


def test_list(projects: Path, evil: dict[str, Path]) -> None:
    text = run("list", "--projects-dir", str(projects))
    assert_one_line(text, "summary", "aititle", "lastprompt", "cwd")
    assert "[fork of forkof-⟨U+001B⟩]" in text


def test_list_json_is_exact(projects: Path, evil: dict[str, Path]) -> None:
    proc = subprocess.run([str(SESSION_LSP), "list", "--projects-dir", str(projects), "--json"], capture_output=True)
    raw = proc.stdout.decode()
    assert not FORBIDDEN & set(raw)  # written as JSON escapes: \u001b, \u009b, \u202e
    listed = {s["sessionId"]: s for s in orjson.loads(proc.stdout)}
    assert listed[SID_A]["title"] == f"summary-{HEAD} FAKE forged line"  # a title's blanks are folded
    assert listed[SID_A]["cwd"] == field("cwd") and listed[SID_A]["gitBranch"] == field("branch")
    assert listed[SID_A]["tag"] == field("tag")
    assert listed[SID_A]["projectDir"] == str(projects / EVIL_FOLDER)
    assert "\\u009b" in proc.stdout.decode() and "\\u202e" in proc.stdout.decode()


def test_overview(projects: Path, evil: dict[str, Path]) -> None:
    text = run("overview", "--projects-dir", str(projects))
    assert_one_line(text, "summary", "aititle", "cwd", "forkof", "agenttype", "tool", "result", "orphan", "dup")
    assert "{'cmd': 'input-\\x1b]52;c;ZXZpbA==\\x07" in text  # a tool's input is shown as Python writes it
    assert f"reply-{SHOWN}" in text and f"prompt-{SHOWN}" in text
    assert "-tmp-evil⟨U+001B⟩]0;FOLDER⟨U+0007⟩⟨U+202E⟩" in text


def test_chain_bodies_keep_their_lines(projects: Path, evil: dict[str, Path]) -> None:
    text = run("chain", SID_A, "--projects-dir", str(projects))
    assert_one_line(text, "tool", "result")
    lines = text.splitlines()
    assert f"     user: prompt-{SHOWN}" in lines and "           second body line" in lines
    assert f"assistant: done-{SHOWN}" in lines and "           body line 2" in lines
    by_path = run("chain", str(evil["a"]), "--projects-dir", str(projects))
    assert f"assistant: done-{SHOWN}" in by_path.splitlines()


def test_check(projects: Path, evil: dict[str, Path]) -> None:
    assert_one_line(run("check", "--projects-dir", str(projects), status=1), "orphan", "dup")
    text = run("check", str(projects / EVIL_FOLDER), status=1)  # a folder: every transcript below it
    assert_one_line(text, "orphan", "dup")
    assert f"-tmp-evil⟨U+001B⟩]0;FOLDER⟨U+0007⟩⟨U+202E⟩/deep⟨U+001B⟩[2J⟨U+009B⟩/{SID_D}.jsonl:2: error" in text
    named = projects / EVIL_FOLDER / f"named-{HEAD}.jsonl"  # `check FILE` checks a file whatever its name
    named.write_text(f"not json {HEAD}\n")
    text = run("check", str(named), status=1)
    assert f"named-{SHOWN}.jsonl:1: error" in text


def test_check_names_skipped_entries(projects: Path, evil: dict[str, Path]) -> None:
    os.mkfifo(projects / EVIL_FOLDER / SUBFOLDER / "eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee.jsonl")
    text = run("check", str(projects / EVIL_FOLDER / SUBFOLDER), status=1)
    assert (
        f"skipped 1 entry that is not a regular file: {projects}/-tmp-evil⟨U+001B⟩]0;FOLDER⟨U+0007⟩⟨U+202E⟩/deep⟨U+001B⟩[2J⟨U+009B⟩/eeee"
        in text
    )


def test_search(projects: Path, evil: dict[str, Path]) -> None:
    text = run("search", "reply", "--projects-dir", str(projects))
    assert "-tmp-evil⟨U+001B⟩]0;FOLDER⟨U+0007⟩⟨U+202E⟩" in text and "⟨U+001B⟩]52;c;ZXZpbA==⟨U+0007⟩" in text
    text = run("search", f"nothing{HEAD}", "--projects-dir", str(projects))
    assert f"no match for 'nothing{SHOWN}'" in text


def test_usage(projects: Path, evil: dict[str, Path]) -> None:
    text = run("usage", "--by", "model", "--projects-dir", str(projects))
    assert_one_line(text, "model")
    for by in ("session", "project", "day"):
        run("usage", "--by", by, "--projects-dir", str(projects))


def test_rename_tag_fork_and_their_echoes(projects: Path, evil: dict[str, Path]) -> None:
    run("rename", SID_C, field("custom"), "--projects-dir", str(projects))
    run("tag", SID_C, field("newtag"), "--projects-dir", str(projects))
    assert_one_line(run("list", "--projects-dir", str(projects)), "custom")
    evil["c"].write_bytes(evil["c"].read_bytes() + b'{"type":"tag","tag":"torn')  # the next append seals it
    text = run("tag", SID_C, "plain", "--projects-dir", str(projects))
    assert f"-tmp-evil⟨U+001B⟩]0;FOLDER⟨U+0007⟩⟨U+202E⟩/{SID_C}.jsonl ended in a torn line" in text
    text = run("fork", SID_C, "--projects-dir", str(projects))
    assert "\t" in text and "-tmp-evil⟨U+001B⟩]0;FOLDER⟨U+0007⟩⟨U+202E⟩/" in text


def test_errors_quoting_what_they_were_given(projects: Path, evil: dict[str, Path], tmp_path: Path) -> None:
    text = run("chain", field("nosuch"), "--projects-dir", str(projects), status=2)
    assert "no session titled 'nosuch-\\x1b]52;c;ZXZpbA==\\x07" in text  # quoted as Python writes a string
    outside = tmp_path / f"outside-{HEAD}.jsonl"
    outside.write_bytes(evil["a"].read_bytes())
    text = run("chain", str(outside), "--projects-dir", str(projects), status=2)
    assert f"outside-{SHOWN}.jsonl" in text
    text = run("check", str(tmp_path / f"gone-{HEAD}.jsonl"), status=2)
    assert f"gone-{SHOWN}.jsonl" in text
    text = run("list", "--projects-dir", str(tmp_path / f"nowhere-{HEAD}"), status=2)
    assert f"nowhere-{SHOWN}" in text


def test_turn_streams_text_and_tool_activity_escaped(projects: Path, tmp_path: Path) -> None:
    """The scripted model echoes the prompt (its streamed reply carries the attack); a Read of a missing file whose
    name carries it shows the call and its error; a Bash call's failing output carries it too."""
    work = tmp_path / f"work-{HEAD}"
    work.mkdir()
    common = ["--projects-dir", str(projects), "--cwd", str(work), "--provider", "anthropic"]
    text = run("turn", "--new", *common, f"hi {HEAD}\nsecond line")
    assert f"echo: hi {SHOWN}\nsecond line" in text
    assert "session " in text and str(projects / project_folder_name(str(work))) in text
    text = run("turn", "--new", *common, f"READ {work}/missing-{HEAD}")
    assert "⏺ Read(file_path: " in text and "⎿ error: " in text and "missing-⟨U+001B⟩" in text
    emit = "printf 'out-\\033]52;c;ZXZpbA==\\007\\033[2J\\302\\233\\342\\200\\256\\n'; exit 3"
    text = run("turn", "--new", *common, "--allow", "Bash", f"BASH {emit}")
    assert "⎿ error: " in text and "out-⟨U+001B⟩]52;c;ZXZpbA==⟨U+0007⟩⟨U+001B⟩[2J⟨U+009B⟩⟨U+202E⟩" in text


def test_turn_events_are_exact_json(projects: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    args = ["turn", "--new", "--projects-dir", str(projects), "--cwd", str(work), "--events", f"hi {HEAD}"]
    proc = subprocess.run([str(SESSION_LSP), *args], capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out, decoder, events = proc.stdout.decode(), json.JSONDecoder(), []
    at = 0
    while at < len(out.rstrip()):
        event, at = decoder.raw_decode(out, at)
        events.append(event)
        at += 1
    assert "\x1b" not in out and "\x9b" not in out and "\u202e" not in out  # written as JSON escapes
    assert "".join(e["text"] for e in events if e["kind"] == "text") == f"echo: hi {HEAD}"


# the rule itself, over every code point


def every_code_point() -> str:
    return "".join(chr(c) for c in range(0x110000))


def test_no_control_or_format_character_is_kept() -> None:
    everything = every_code_point()
    body, line = escape(everything), one_line(everything)
    assert not FORBIDDEN & set(body) and not FORBIDDEN & set(line)
    for text, kept in ((body, "\n\t"), (line, "")):
        left = {ch for ch in text if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp")}
        assert left == set(kept)
    assert "\n" not in line and "\t" not in line
    assert "⟨U+0000⟩⟨U+0001⟩" in body and "⟨U+007F⟩⟨U+0080⟩" in body and "⟨U+10FFFF⟩" not in body


def test_what_a_terminal_draws_is_kept() -> None:
    """Every character not a control, format character, separator or surrogate is shown as it is, in order."""
    everything = every_code_point()
    drawn = "".join(ch for ch in everything if unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Zl", "Zp"))
    assert one_line(drawn) == drawn and escape(drawn) == drawn
    assert escape("naïve 東京 👩 \u00a0\ue000") == "naïve 東京 👩 \u00a0\ue000"
    assert one_line("a\u200db") == "a⟨U+200D⟩b"  # a zero-width joiner too: it is not shown


def test_bodies_keep_newline_and_tab_only() -> None:
    assert escape("a\tb\nc\r\n\x1b[2J") == "a\tb\nc⟨U+000D⟩\n⟨U+001B⟩[2J"
    assert one_line("a\tb\nc") == "a⟨U+0009⟩b⟨U+000A⟩c"
    assert one_line(Path("/x\x1b")) == "/x⟨U+001B⟩"


def test_serve_log_lines_are_escaped(projects: Path, evil: dict[str, Path], tmp_path: Path) -> None:
    """The server's log (a file people `tail -f`, or stderr) quotes paths of the projects folder: a FIFO named like a
    session in a folder whose name holds an OSC is logged as skipped, written out."""
    from rawlsp import RawServer

    os.mkfifo(projects / EVIL_FOLDER / "eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee.jsonl")
    log = tmp_path / "server.log"
    for args in (["--log-file", str(log), "-v"], ["-v"]):
        with RawServer(*args, command=[str(SESSION_LSP)]) as server:
            server.initialize(projects, watch=False)
            assert "result" in server.call("sessions/list", {"projectsDir": str(projects)})
        text = log.read_text() if args[0] == "--log-file" else server.stderr.decode()
        assert "skipped " in text and "-tmp-evil⟨U+001B⟩]0;FOLDER⟨U+0007⟩⟨U+202E⟩/eeee" in text, text
        assert not FORBIDDEN & set(text), text
