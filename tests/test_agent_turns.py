"""Whole turns against the scripted test model on loopback: what is sent, what is recorded."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from scripted_api import ScriptedModelServer, scripted_provider
from test_agent_support import conversation, rows

from server.agent.cancel import CancelToken
from server.agent.events import TurnEvent, TurnResult
from server.agent.loop import run_turn
from server.agent.request import TurnRequest
from storage.chain import build_chain
from storage.paths import project_folder_name
from storage.resume import resume
from storage.transcript import Transcript


@pytest.fixture
def model():
    server = ScriptedModelServer(slow_interval=0.02)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    (root / "src").mkdir(parents=True)
    (root / "src" / "login.ts").write_text("export const login = () => true\n")
    (root / "src" / "audit.ts").write_text("export const audit = (e) => e\n")
    return root


class Turns:
    def __init__(self, model: ScriptedModelServer, project: Path, projects: Path) -> None:
        self.model, self.project, self.projects = model, project, projects
        self.events: list[TurnEvent] = []

    def run(self, prompt: str, *, cancel: Any = None, on_event: Any = None, **kw: Any) -> TurnResult:
        kw.setdefault("cwd", str(self.project))
        req = TurnRequest(prompt=prompt, projects_dir=self.projects, **kw)
        sink = on_event or self.events.append
        return run_turn(req, on_event=sink, cancel=cancel, provider=scripted_provider(base_url=self.model.base_url))


@pytest.fixture
def turns(model: ScriptedModelServer, project: Path, tmp_path: Path) -> Turns:
    return Turns(model, project, tmp_path / "config" / "projects")


def sent_then_replied(model: ScriptedModelServer, result: TurnResult) -> list[dict[str, Any]]:
    """The last request of the turn plus the reply it got: the conversation as it happened."""
    last = model.requests[-1]["messages"]
    return conversation(
        last + [{"role": "assistant", "content": [{"type": "text", "text": result.text.split("\n\n")[-1]}]}]
    )


def assert_recorded_as_sent(model: ScriptedModelServer, result: TurnResult) -> None:
    assert conversation(resume(result.path).messages) == sent_then_replied(model, result)


def test_plain_text_new_session(turns: Turns, project: Path) -> None:
    result = turns.run("hello there")
    assert result.text == "echo: hello there"
    path = Path(result.path)
    assert path.parent.name == project_folder_name(str(project.resolve()))
    assert path.name == f"{result.session_id}.jsonl"
    assert_recorded_as_sent(turns.model, result)
    body = rows(path)
    prompt = next(r for r in body if r.get("type") == "user")
    assert prompt["parentUuid"] is None and prompt["message"]["content"] == "hello there"
    assert prompt["cwd"] == str(project.resolve()) and prompt["sessionId"] == result.session_id
    last_prompt = [r for r in body if r.get("type") == "last-prompt"][-1]
    assert last_prompt["leafUuid"] == result.appended[-1] and last_prompt["lastPrompt"] == "hello there"
    assert any(r.get("type") == "cost-state" for r in body)
    assert [e.kind for e in turns.events][0] == "session" and turns.events[-1].kind == "done"
    assert "".join(e.data["text"] for e in turns.events if e.kind == "text") == "echo: hello there"
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0


def test_one_tool_call(turns: Turns, project: Path) -> None:
    target = project / "src" / "login.ts"
    result = turns.run(f"READ {target}")
    assert result.text == "I read it (1 tool results)."
    body = rows(result.path)
    use = next(r for r in body if r.get("type") == "assistant" and r["message"]["content"][0]["type"] == "tool_use")
    res = next(
        r
        for r in body
        if r.get("type") == "user"
        and isinstance(r["message"]["content"], list)
        and r["message"]["content"][0].get("type") == "tool_result"
    )
    assert res["parentUuid"] == use["uuid"] and res["sourceToolAssistantUUID"] == use["uuid"]
    assert res["message"]["content"][0]["content"] == "1\texport const login = () => true\n2\t"
    assert res["toolUseResult"]["file"]["filePath"] == str(target)
    assert_recorded_as_sent(turns.model, result)
    kinds = [e.kind for e in turns.events]
    assert kinds.index("tool_call") < kinds.index("tool_result") < kinds.index("done")


def test_parallel_tool_calls(turns: Turns, project: Path) -> None:
    a, b = project / "src" / "login.ts", project / "src" / "audit.ts"
    result = turns.run(f"PAR {a} {b}")
    assert result.text == "Reading them all.\n\nI read it (2 tool results)."
    body = rows(result.path)
    first = [r for r in body if r.get("type") == "assistant"][:3]
    assert len({r["message"]["id"] for r in first}) == 1
    assert [r["parentUuid"] for r in first[1:]] == [first[0]["uuid"], first[1]["uuid"]]
    results = [r for r in body if r.get("sourceToolAssistantUUID")]
    assert [r["parentUuid"] for r in results] == [first[1]["uuid"], first[2]["uuid"]]
    api = resume(result.path).messages
    merged = [m for m in api if m["role"] == "assistant"][0]
    assert [blk["type"] for blk in merged["content"]] == ["text", "tool_use", "tool_use"]
    answers = [m for m in api if m["role"] == "user" and m["content"][0].get("type") == "tool_result"][0]
    assert [blk["content"] for blk in answers["content"]] == [
        "1\texport const login = () => true\n2\t",
        "1\texport const audit = (e) => e\n2\t",
    ]
    assert_recorded_as_sent(turns.model, result)


def test_tool_error_goes_back_to_the_model(turns: Turns, project: Path) -> None:
    result = turns.run("READ /etc/passwd")
    assert result.text == "I read it (1 tool results)."
    block = next(r for r in rows(result.path) if r.get("sourceToolAssistantUUID"))["message"]["content"][0]
    assert block["is_error"] is True and "outside the working directory" in block["content"]
    result = turns.run("READ src/missing.ts", mode="resume", session=result.session_id)
    sent = turns.model.requests[-1]["messages"][-1]["content"][0]
    assert sent["is_error"] is True and "does not exist" in sent["content"]
    assert_recorded_as_sent(turns.model, result)


def test_cancelled_while_streaming(turns: Turns) -> None:
    token = CancelToken()
    seen: list[TurnEvent] = []

    def sink(event: TurnEvent) -> None:
        seen.append(event)
        if event.kind == "text":
            token.cancel()

    result = turns.run("SLOW tell me a story", cancel=token, on_event=sink)
    assert result.cancelled and result.stop_reason == "cancelled"
    body = rows(result.path)
    chain = [r for r in body if r.get("type") in ("user", "assistant")]
    assert chain[-1]["message"]["content"] == [{"type": "text", "text": "[Request interrupted by user]"}]
    _assert_every_call_answered(body)
    again = turns.run("and now?", mode="resume", session=result.session_id)
    assert again.text == "echo: and now?" and again.path == result.path
    assert_recorded_as_sent(turns.model, again)


def test_cancelled_before_tools_run(turns: Turns, project: Path) -> None:
    token = threading.Event()

    def sink(event: TurnEvent) -> None:
        if event.kind == "tool_call":
            token.set()

    result = turns.run(f"PAR {project / 'src/login.ts'} {project / 'src/audit.ts'}", cancel=token, on_event=sink)
    assert result.cancelled
    body = rows(result.path)
    _assert_every_call_answered(body)
    last = [r for r in body if r.get("type") == "user"][-1]
    assert last["message"]["content"] == [{"type": "text", "text": "[Request interrupted by user for tool use]"}]
    rejected = [r["message"]["content"][0] for r in body if r.get("sourceToolAssistantUUID")]
    assert len(rejected) == 2 and all(b["is_error"] for b in rejected)
    chain = build_chain(Transcript.load(result.path))
    assert chain.leaf is not None and chain.leaf.uuid == result.appended[-1]


def _assert_every_call_answered(body: list[dict[str, Any]]) -> None:
    calls = {
        b["id"]
        for r in body
        if r.get("type") == "assistant"
        for b in r["message"]["content"]
        if b.get("type") == "tool_use"
    }
    answered = {
        b["tool_use_id"]
        for r in body
        if r.get("type") == "user" and isinstance(r["message"]["content"], list)
        for b in r["message"]["content"]
        if b.get("type") == "tool_result"
    }
    assert calls <= answered


def test_resumed_session_sends_the_whole_conversation(turns: Turns, project: Path) -> None:
    first = turns.run(f"READ {project / 'src/login.ts'}")
    before = conversation(resume(first.path).messages)
    second = turns.run("what did it say?", mode="resume", session=first.session_id)
    assert second.path == first.path and second.session_id == first.session_id
    sent = conversation(turns.model.requests[-1]["messages"])
    assert sent == before + [{"role": "user", "content": [{"type": "text", "text": "what did it say?"}]}]
    assert_recorded_as_sent(turns.model, second)
    assert set(first.appended).isdisjoint(second.appended)


def test_continue_and_fork(turns: Turns) -> None:
    first = turns.run("one")
    cont = turns.run("two", mode="continue")
    assert cont.path == first.path
    fork = turns.run("three", mode="fork", session=first.session_id)
    assert fork.session_id != first.session_id and Path(fork.path).parent == Path(first.path).parent
    texts = [m["content"][0]["text"] for m in conversation(resume(fork.path).messages)]
    assert texts == ["one", "echo: one", "two", "echo: two", "three", "echo: three"]
    assert len(conversation(resume(first.path).messages)) == 4


def test_overloaded_is_retried(turns: Turns) -> None:
    result = turns.run("FAIL 2")
    assert result.text == "echo: FAIL 2"
    assert [e.data["attempt"] for e in turns.events if e.kind == "retry"] == [1, 2]


def test_memory_is_recorded_and_sent(turns: Turns, project: Path) -> None:
    (project / "CLAUDE.md").write_text("Always answer in haiku. See @notes.md\n")
    (project / "notes.md").write_text("NOTES\n")
    result = turns.run("hi")
    first = turns.model.requests[-1]["messages"][0]["content"]
    assert "Contents of" in first[0]["text"] and "Always answer in haiku" in first[0]["text"]
    assert "NOTES" in first[0]["text"] and first[-1]["text"] == "hi"
    instructions = [
        r for r in rows(result.path) if r.get("type") == "attachment" and r["attachment"]["type"] == "instructions"
    ]
    assert [f["path"] for f in instructions[0]["attachment"]["files"]] == [
        str(project.resolve() / "CLAUDE.md"),
        str(project.resolve() / "notes.md"),
    ]
