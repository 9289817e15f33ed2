"""A response whose tool call carries a lone surrogate (`"\\ud800"`, valid JSON, not valid Unicode: a gateway or a
model endpoint may send it). The transcript records it with U+FFFD; the conversation sent back with the next
request must carry the same, or the request cannot be encoded and the turn dies with an exception. A whole turn
against the scripted model, a real Write."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scripted_api import ScriptedModelServer, plan_reply, scripted_provider
from test_agent_support import rows

from server.agent.loop import run_turn
from server.agent.request import TurnRequest


def lone_surrogates(messages: list[Any]) -> tuple[str, list[dict[str, Any]]]:
    last = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
    if isinstance(last, list) and any(b.get("type") == "tool_result" for b in last):
        return plan_reply(messages)
    return "normal", [
        {"type": "tool_use", "id": "", "name": "Write", "input": {"file_path": "s.txt", "content": "a\ud800b\n"}},
        {"type": "tool_use", "id": "", "name": "Grep", "input": {"pattern": "\udfff|a"}},
    ]


def test_a_tool_call_with_a_lone_surrogate_goes_on_as_recorded(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with ScriptedModelServer(planner=lone_surrogates) as model:
        request = TurnRequest(prompt="go", projects_dir=tmp_path / "projects", cwd=str(work), tools=("Write",))
        result = run_turn(request, on_event=lambda e: None, provider=scripted_provider(base_url=model.base_url))
        asked = len(model.requests)
    # before: UnicodeEncodeError out of run_turn, building the second request
    assert asked == 2 and result.text == "I read it (2 tool results)."
    assert (work / "s.txt").read_text(encoding="utf-8") == "a\ufffdb\n"
    results = {
        block["tool_use_id"]: block
        for r in rows(result.path)
        if r.get("type") == "user" and isinstance(r["message"]["content"], list)
        for block in r["message"]["content"]
        if block.get("type") == "tool_result"
    }
    assert len(results) == 2 and not any(b.get("is_error") for b in results.values()), results
