"""Values nested deeper than our parsers and encoders go. The real CLI (Node's `JSON.parse` and `JSON.stringify`)
reads and writes rows nested thousands of levels deep: a model's tool input, a tool's result, or a line anyone
plants in the projects folder (a few KB). Ours stop far earlier: msgspec (the link decoder every reader runs
first) and Python's `json` raise `RecursionError` past about 1,000 levels, orjson writes no more than 254, and
cattrs (which pygls runs over every answer) recurses too.

Before: one planted line nested 3,000 deep made `check` and `overview` fail for the whole folder, `chain` end in a
traceback (status 1), and the server's first index lose every file's diagnostics (the other sessions' too) while
`sessions/chain` and `sessions/conversation` failed with internal errors; a session whose tool input is nested
1,010 deep (which the readers take) got no answer at all to `sessions/chain` (pygls logged the encoding failure
and the client waited for good); a model's tool input nested 300 deep ended the turn with `TypeError: Recursion
limit reached` before its call was recorded, and `fork` and `chain --json` of a session holding one ended in a
traceback. Real files, the real command line and server over stdio, a whole turn against the scripted model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from rawlsp import RawServer
from scripted_api import ScriptedModelServer, plan_reply, scripted_provider
from test_agent_support import rows

from server.agent.loop import run_turn
from server.agent.request import TurnRequest

DEEP = "11111111-2222-4333-8444-555555555555"
OTHER = "22222222-2222-4333-8444-555555555555"
PROMPT = "aaaaaaaa-0000-4000-8000-000000000001"
REPLY = "aaaaaaaa-0000-4000-8000-000000000002"


def nested(depth: int) -> Any:
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def depth_of(value: Any) -> int:
    """How deep `nested` made `value` (without recursion: `==` on it would recurse past Python's limit)."""
    depth = 0
    while isinstance(value, list):
        depth += 1
        value = value[0] if value else None
    return depth


def session(projects: Path, sid: str, reply: str | None, parent: str | None = None) -> Path:
    """A session of a prompt and (when `reply` is given: its JSON text) a reply, in `<projects>/-w`."""
    folder = projects / "-w"
    folder.mkdir(parents=True, exist_ok=True)
    head = {"parentUuid": parent, "isSidechain": False, "type": "user", "message": {"role": "user", "content": "hi"}}
    lines = [
        json.dumps({**head, "uuid": PROMPT, "timestamp": "2026-01-01T00:00:00.000Z", "sessionId": sid, "cwd": "/w"})
    ]
    if reply is not None:
        lines.append(
            f'{{"parentUuid":"{PROMPT}","isSidechain":false,"type":"assistant","message":{{"id":"m1","role":"assistant",'
            f'"content":[{{"type":"tool_use","id":"toolu_1","name":"Glob","input":{{"pattern":"*","x":{reply}}}}}]}},'
            f'"uuid":"{REPLY}","timestamp":"2026-01-01T00:00:01.000Z","sessionId":"{sid}","cwd":"/w"}}'
        )
    path = folder / f"{sid}.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def planted(projects: Path, depth: int) -> None:
    """The deep session, and another whose prompt's parent is in no file (a warning of its own)."""
    session(projects, DEEP, "[" * depth + "]" * depth)
    session(projects, OTHER, None, parent="bbbbbbbb-0000-4000-8000-00000000dead")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server.cli", *args], capture_output=True, text=True, timeout=120, env=os.environ
    )


def test_a_line_nested_past_every_parser_is_a_bad_line_and_the_rest_is_read(tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    planted(projects, 3000)
    done = run("check", "--projects-dir", str(projects))
    assert done.returncode == 1, done.stderr  # the line is an error; before: "check failed: RecursionError", 2
    assert f"{DEEP}.jsonl:2: error: invalid JSON: nested too deeply [invalid-json]" in done.stdout
    assert f"{OTHER}.jsonl:1: warning: parentUuid" in done.stdout
    done = run("chain", DEEP, "--projects-dir", str(projects), "--json")
    assert done.returncode == 0, done.stderr  # before: a traceback, status 1
    assert json.loads(done.stdout)["uuids"] == [PROMPT]
    done = run("overview", "--projects-dir", str(projects))
    assert done.returncode == 0 and "nested too deeply" in done.stdout, done.stderr


def test_the_server_indexes_every_file_beside_a_line_nested_past_every_parser(tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    planted(projects, 3000)
    with RawServer() as server:
        server.initialize(projects)
        report = server.call("workspace/diagnostic", {"previousResultIds": []})["result"]["items"]
        codes = {Path(item["uri"]).name: [d["code"] for d in item["items"]] for item in report}
        assert codes == {f"{DEEP}.jsonl": ["invalid-json"], f"{OTHER}.jsonl": ["dangling-parent"]}, report
        for method in ("sessions/chain", "sessions/conversation"):
            answer = server.call(method, {"sessionId": DEEP})
            assert "result" in answer, answer  # before: -32603, RecursionError


def test_the_server_answers_a_chain_nested_past_its_encoder(tmp_path: Path) -> None:
    """1,010 levels: orjson reads the line (msgspec does not), pygls's encoding of the answer failed."""
    projects = tmp_path / "projects"
    planted(projects, 1010)
    with RawServer() as server:
        server.initialize(projects)
        answer = server.call("sessions/chain", {"sessionId": DEEP}, timeout=30)  # before: never answered
        assert answer["result"]["uuids"] == [PROMPT, REPLY], answer
        call = next(b for m in answer["result"]["messages"][1:] for b in m["content"] if b["type"] == "tool_use")
        assert depth_of(call["input"]["x"]) == 1010
        assert "result" in server.call("sessions/list", {})


def deep_call(messages: list[Any]) -> tuple[str, list[dict[str, Any]]]:
    last = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
    if isinstance(last, list) and any(b.get("type") == "tool_result" for b in last):
        return plan_reply(messages)
    return "normal", [{"type": "tool_use", "id": "", "name": "Glob", "input": {"pattern": "*", "x": nested(300)}}]


def test_a_tool_call_nested_300_deep_is_recorded_run_and_forked_whole(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    projects = tmp_path / "projects"
    with ScriptedModelServer(planner=deep_call) as model:
        request = TurnRequest(prompt="go", projects_dir=projects, cwd=str(work))
        result = run_turn(request, on_event=lambda e: None, provider=scripted_provider(base_url=model.base_url))
        asked = len(model.requests)
    # before: TypeError (orjson's recursion limit) out of run_turn, the call neither recorded nor run
    assert asked == 2 and result.text == "I read it (1 tool results).", result
    calls = [b for r in rows(result.path) if r["type"] == "assistant" for b in r["message"]["content"]]
    assert calls[0]["input"]["x"] == nested(300)
    done = run("fork", result.session_id, "--projects-dir", str(projects), "--json")
    assert done.returncode == 0, done.stderr  # before: a traceback, status 1
    copied = [r for r in rows(json.loads(done.stdout)["path"]) if r["type"] == "assistant"]
    assert copied[0]["message"]["content"][0]["input"]["x"] == nested(300)
    done = run("chain", result.session_id, "--projects-dir", str(projects), "--json")
    assert done.returncode == 0, done.stderr  # before: a traceback, status 1
    sent = [b for m in json.loads(done.stdout)["messages"] if isinstance(m["content"], list) for b in m["content"]]
    assert next(b for b in sent if b["type"] == "tool_use")["input"]["x"] == nested(300)


def test_search_takes_a_tool_input_nested_1010_deep(tmp_path: Path) -> None:
    """The search index flattens every tool input into its words: it recursed, two frames a level, so `search`
    (status 1, a traceback) and `workspace/symbol` (-32603) failed for the whole folder, at every query."""
    projects = tmp_path / "projects"
    planted(projects, 1010)
    done = run("search", "hi", "--projects-dir", str(projects), "--json")
    assert done.returncode == 0, done.stderr
    assert {hit["sessionId"] for hit in json.loads(done.stdout)} == {DEEP, OTHER}
    with RawServer() as server:
        server.initialize(projects)
        answer = server.call("workspace/symbol", {"query": "hi"})
        assert "result" in answer and answer["result"], answer
