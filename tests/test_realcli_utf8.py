"""The real CLI 2.1.328 resumes a transcript whose lines hold bytes that are not UTF-8: it reads them as
U+FFFD and keeps the rows. `chain --json` must give the same conversation (it used to drop such lines)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
from realcli import run_claude
from scripted_api import ScriptedModelServer

from storage.paths import project_folder_name

REPO = Path(__file__).resolve().parent.parent


def texts(messages: list[dict[str, Any]]) -> list[str]:
    out = []
    for m in messages:
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        out += [b["text"] for b in blocks if b.get("type") == "text" and "MARK-" in b.get("text", "")]
    return out


def test_lines_with_bytes_that_are_not_utf8_resume_as_the_cli_resumes_them(claude: Path, tmp_path: Path) -> None:
    cwd = tmp_path / "shop"
    cwd.mkdir()
    config = tmp_path / "config"
    folder = config / "projects" / project_folder_name(str(cwd.resolve()))
    folder.mkdir(parents=True)
    sid = "5f0c1a52-8a57-4c1e-9d1e-6a1c0e9b7f31"
    base = {
        "isSidechain": False,
        "userType": "external",
        "cwd": str(cwd.resolve()),
        "sessionId": sid,
        "version": "2.1.328",
        "gitBranch": "main",
    }
    rows = [
        {
            "parentUuid": None,
            "type": "user",
            "uuid": "00000000-0000-4000-8000-000000000001",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": "MARK-1 first \udcff"},
        },
        {
            "parentUuid": "00000000-0000-4000-8000-000000000001",
            "type": "assistant",
            "uuid": "00000000-0000-4000-8000-000000000002",
            "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-opus-5-5",
                "content": [{"type": "text", "text": "MARK-2 caf\udce9 reply"}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        },
        {
            "parentUuid": "00000000-0000-4000-8000-000000000002",
            "type": "user",
            "uuid": "00000000-0000-4000-8000-000000000003",
            "timestamp": "2026-01-01T00:00:02.000Z",
            "message": {"role": "user", "content": "MARK-3 second"},
            "note": "skipped \udcfe\udcff",
        },
        {
            "parentUuid": "00000000-0000-4000-8000-000000000003",
            "type": "assistant",
            "uuid": "00000000-0000-4000-8000-000000000004",
            "timestamp": "2026-01-01T00:00:03.000Z",
            "message": {
                "id": "msg_2",
                "type": "message",
                "role": "assistant",
                "model": "claude-opus-5-5",
                "content": [{"type": "text", "text": "MARK-4 last"}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        },
    ]
    # lone surrogates from surrogateescape become the raw bytes 0xff, 0xe9, 0xfe: not UTF-8
    lines = [json.dumps({**base, **r}, ensure_ascii=False).encode("utf-8", "surrogateescape") for r in rows]
    path = folder / f"{sid}.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert sum(1 for ln in lines if not _valid(ln)) == 3

    with ScriptedModelServer() as model:
        done = run_claude(
            ["hello", "--resume", sid, "--bare", "--tools", "Read"],
            cwd=cwd,
            config_dir=config,
            base_url=model.base_url,
            timeout=120,
            claude=claude,
            allowed_tools=None,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        sent = next(r for r in model.requests if r.get("sessionId") == sid)["messages"]
    ours = subprocess.run(
        [
            sys.executable,
            "-m",
            "server.cli",
            "chain",
            str(path),
            "--json",
            "--bare",
            "--projects-dir",
            str(path.parent.parent),
        ],
        capture_output=True,
        cwd=REPO,
        timeout=120,
    )
    assert ours.returncode == 0, ours.stderr
    mine = orjson.loads(ours.stdout)["messages"]
    assert texts(sent) == ["MARK-1 first \ufffd", "MARK-2 caf\ufffd reply", "MARK-3 second", "MARK-4 last"]
    assert texts(mine) == texts(sent)


def _valid(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
