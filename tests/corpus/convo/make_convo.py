"""Make the `convo` corpus: one session by the real Claude Code CLI 2.1.328 with edits, a write,
thinking, an image and a rewind branch (for `sessions/conversation` and the editors' chat views).

Run: `.venv/bin/python tests/corpus/convo/make_convo.py` (needs the real CLI). The CLI runs offline
against the project's scripted test model (`tests/scripted_api.py`), extended here, for this
corpus only, with three words: `EDIT <path>` (an Edit call), `WRITE <path>` (a Write call creating
the file) and `THINK <text>` (a reply with a thinking block before its text). The session file is
copied byte for byte into `projects/`.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from realcli import claude_env, find_claude, run_claude  # noqa: E402

import scripted_api as sa  # noqa: E402

SESSION = "c0c0c0c0-0000-4000-8000-000000000001"
ROOT = Path("/tmp/slsp-convo")
WORK = ROOT / "work"
CONFIG = ROOT / "config"
TOOLS = ("Read", "Edit", "Write")

_plan = sa.plan_reply
_stream = sa.stream_events


def plan_reply(messages: list[Any]) -> tuple[str, list[dict[str, Any]]]:
    user = sa._last_user(messages)
    blocks = sa._blocks(user) if user else []
    if not any(b.get("type") == "tool_result" for b in blocks):
        texts = [b for b in blocks if b.get("type") == "text" and not sa._is_reminder(b)]
        text = str(texts[-1].get("text", "")).strip() if texts else ""
        word, _, rest = text.partition(" ")
        if word == "EDIT":
            edit = {"file_path": rest, "old_string": "two", "new_string": "TWO\nthree"}
            return "normal", [sa._text("Changing the second line."), sa._tool("Edit", edit)]
        if word == "WRITE":
            return "normal", [sa._tool("Write", {"file_path": rest, "content": "hello\nworld\n"})]
        if word == "THINK":
            thinking = {
                "type": "thinking",
                "thinking": f"The user asks about {rest}; answer briefly.",
                "signature": "c2NyaXB0ZWQ=",
            }
            return "normal", [thinking, sa._text(f"Thought about {rest}.")]
    return _plan(messages)


def stream_events(message: dict[str, Any], slow: bool):  # type: ignore[no-untyped-def]
    """As the scripted model streams, plus thinking blocks (thinking and signature deltas)."""
    thinking = [b for b in message["content"] if b["type"] == "thinking"]
    if not thinking:
        yield from _stream(message, slow)
        return
    rest = dict(message, content=[b for b in message["content"] if b["type"] != "thinking"])
    events = list(_stream(rest, slow))
    head, tail = events[:2], events[2:]
    yield from head
    for index, block in enumerate(thinking):
        start = {
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        }
        yield sa._sse("content_block_start", start), 0.0
        for delta in (
            {"type": "thinking_delta", "thinking": block["thinking"]},
            {"type": "signature_delta", "signature": block["signature"]},
        ):
            yield sa._sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}), 0.0
        yield sa._sse("content_block_stop", {"type": "content_block_stop", "index": index}), 0.0
    shift = len(thinking)
    for raw, delay in tail:
        text = raw.decode()
        event, _, data = text.partition("\ndata: ")
        payload = json.loads(data)
        if "index" in payload:
            payload["index"] += shift
        yield sa._sse(event.removeprefix("event: "), payload), delay


def png_1x1() -> str:
    """A 2x2 red PNG, base64."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")

    raw = b"".join(b"\x00" + b"\xff\x00\x00" * 2 for _ in range(2))
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", (2).to_bytes(4, "big") * 2 + b"\x08\x02\x00\x00\x00")
    png += chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    return base64.b64encode(png).decode()


def session_file() -> Path:
    return next(CONFIG.glob(f"projects/*/{SESSION}.jsonl"))


def claude(args: list[str], base_url: str) -> None:
    r = run_claude(args, cwd=WORK, config_dir=CONFIG, base_url=base_url, allowed_tools=TOOLS)
    print("$ claude -p", " ".join(args), "->", r.returncode, r.stdout.strip())
    if r.returncode != 0:
        raise SystemExit(r.stderr)


def image_turn(base_url: str) -> None:
    """A prompt with an image, sent through `--input-format stream-json`."""
    prompt = {
        "type": "user",
        "message": {
            "role": "user",
            "content": [
                {"type": "text", "text": "What colour is this square?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png_1x1()}},
            ],
        },
    }
    binary = find_claude()
    assert binary is not None, "REAL CLI NOT AVAILABLE"
    cmd = [
        str(binary),
        "-p",
        "--resume",
        SESSION,
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--allowedTools",
        ",".join(TOOLS),
    ]
    env = claude_env(
        config_dir=CONFIG, base_url=base_url, home=ROOT / "home", extra={"CLAUDE_CODE_TMPDIR": str(ROOT / "tmp")}
    )
    r = subprocess.run(
        cmd, cwd=WORK, env=env, input=json.dumps(prompt) + "\n", capture_output=True, text=True, timeout=120
    )
    print("$ claude -p --resume (image prompt) ->", r.returncode)
    if r.returncode != 0:
        raise SystemExit(r.stderr)


def main() -> None:
    sa.plan_reply = plan_reply
    sa.stream_events = stream_events
    shutil.rmtree(ROOT, ignore_errors=True)
    WORK.mkdir(parents=True)
    (ROOT / "home").mkdir()
    (WORK / "notes.txt").write_text("one\ntwo\nfour\n")
    with sa.ScriptedModelServer() as model:
        url = model.base_url
        claude(["READ notes.txt", "--session-id", SESSION], url)
        claude([f"EDIT {WORK}/notes.txt", "--resume", SESSION], url)
        claude([f"WRITE {WORK}/hello.txt", "--resume", SESSION], url)
        rows = [json.loads(line) for line in session_file().read_text().splitlines()]
        rewind_to = [r["uuid"] for r in rows if r.get("type") == "assistant"][-1]
        claude(["THINK the weather", "--resume", SESSION], url)
        image_turn(url)
        claude(["Another way, please.", "--resume", SESSION, "--resume-session-at", rewind_to], url)
        claude(["And one more prompt.", "--resume", SESSION], url)
    dest = HERE / "projects"
    shutil.rmtree(dest, ignore_errors=True)
    src = session_file()
    (dest / src.parent.name).mkdir(parents=True)
    shutil.copy2(src, dest / src.parent.name / src.name)
    print("wrote", dest / src.parent.name / src.name)


if __name__ == "__main__":
    main()
