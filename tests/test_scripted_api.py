"""The scripted test model, exercised with the official ``anthropic`` SDK."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import anthropic
import pytest
from scripted_api import ScriptedModelServer, plan_reply, session_id_from_metadata

MODEL = "claude-test-model"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(log_path=tmp_path / "requests.jsonl", slow_interval=0.01) as srv:
        yield srv


@pytest.fixture
def client(server: ScriptedModelServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.base_url, api_key="anything", max_retries=0)


def ask(client: anthropic.Anthropic, text: str, **kw: object) -> anthropic.types.Message:
    return client.messages.create(model=MODEL, max_tokens=100, messages=[{"role": "user", "content": text}], **kw)  # type: ignore[arg-type]


def test_echo_non_streaming(client: anthropic.Anthropic, server: ScriptedModelServer) -> None:
    msg = ask(client, "  hello there  ")
    assert [b.type for b in msg.content] == ["text"]
    assert msg.content[0].text == "echo: hello there"  # type: ignore[union-attr]
    assert msg.stop_reason == "end_turn"
    assert msg.id.startswith("msg_")
    assert msg.usage.input_tokens > 0 and msg.usage.output_tokens > 0
    assert server.requests[-1]["messages"] == [{"role": "user", "content": "  hello there  "}]
    assert server.requests[-1]["path"].startswith("/v1/messages")


def test_echo_streaming(client: anthropic.Anthropic) -> None:
    kinds = []
    with client.messages.stream(
        model=MODEL, max_tokens=100, messages=[{"role": "user", "content": "stream me"}]
    ) as stream:
        for event in stream:
            kinds.append(event.type)
        final = stream.get_final_message()
    assert final.content[0].text == "echo: stream me"  # type: ignore[union-attr]
    assert kinds[0] == "message_start" and "content_block_delta" in kinds
    assert final.stop_reason == "end_turn"


def test_read_tool_use(client: anthropic.Anthropic) -> None:
    msg = ask(client, "READ /x/y.ts")
    assert msg.stop_reason == "tool_use"
    (block,) = msg.content
    assert block.type == "tool_use" and block.name == "Read"
    assert block.input == {"file_path": "/x/y.ts"}
    assert block.id.startswith("toolu_") and len(block.id) == len("toolu_") + 20


def test_par_streaming_tool_uses(client: anthropic.Anthropic) -> None:
    with client.messages.stream(
        model=MODEL, max_tokens=100, messages=[{"role": "user", "content": "PAR /a /b /c"}]
    ) as stream:
        final = stream.get_final_message()
    assert [b.type for b in final.content] == ["text", "tool_use", "tool_use", "tool_use"]
    assert final.content[0].text == "Reading them all."  # type: ignore[union-attr]
    assert [b.input for b in final.content[1:]] == [{"file_path": p} for p in ("/a", "/b", "/c")]  # type: ignore[union-attr]
    ids = {b.id for b in final.content[1:]}  # type: ignore[union-attr]
    assert len(ids) == 3


def test_tool_results_reply(client: anthropic.Anthropic) -> None:
    first = ask(client, "PAR /a /b")
    uses = [b for b in first.content if b.type == "tool_use"]
    msg = client.messages.create(
        model=MODEL,
        max_tokens=100,
        messages=[
            {"role": "user", "content": "PAR /a /b"},
            {"role": "assistant", "content": first.content},  # type: ignore[typeddict-item]
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": u.id, "content": "x"} for u in uses]},
        ],
    )
    assert msg.content[0].text == "I read it (2 tool results)."  # type: ignore[union-attr]


def test_other_tools() -> None:
    def one(text: str) -> dict[str, object]:
        kind, blocks = plan_reply([{"role": "user", "content": text}])
        assert kind == "normal"
        (block,) = blocks
        return {"name": block["name"], "input": block["input"]}

    assert one("LS /src") == {"name": "LS", "input": {"path": "/src"}}
    assert one("GLOB **/*.py") == {"name": "Glob", "input": {"pattern": "**/*.py"}}
    assert one("GREP def main") == {"name": "Grep", "input": {"pattern": "def main"}}
    assert one("AGENT READ /a") == {
        "name": "Agent",
        "input": {"description": "sub task", "prompt": "READ /a", "subagent_type": "general-purpose"},
    }


def test_last_text_block_wins() -> None:
    content = [{"type": "text", "text": "<system-reminder>x</system-reminder>"}, {"type": "text", "text": "READ /q"}]
    _, blocks = plan_reply([{"role": "user", "content": content}, {"role": "system", "content": "sys"}])
    assert blocks[0]["input"] == {"file_path": "/q"}


def test_count_tokens(client: anthropic.Anthropic, server: ScriptedModelServer) -> None:
    before = len(server.requests)
    result = client.messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": "x" * 400}])
    assert result.input_tokens >= 100
    assert len(server.requests) == before


def test_fail_then_recover(server: ScriptedModelServer) -> None:
    strict = anthropic.Anthropic(base_url=server.base_url, api_key="k", max_retries=0)
    with pytest.raises(anthropic.APIStatusError) as info:
        ask(strict, "FAIL 2")
    assert info.value.status_code == 529
    assert info.value.body["error"]["type"] == "overloaded_error"  # type: ignore[index]
    with pytest.raises(anthropic.APIStatusError):
        ask(strict, "FAIL 2")
    assert ask(strict, "FAIL 2").content[0].text == "echo: FAIL 2"  # type: ignore[union-attr]


def test_fail_is_retried_by_sdk(server: ScriptedModelServer) -> None:
    retrying = anthropic.Anthropic(base_url=server.base_url, api_key="k", max_retries=3)
    msg = retrying.with_options(timeout=10).messages.create(
        model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "FAIL 2"}]
    )
    assert msg.content[0].text == "echo: FAIL 2"  # type: ignore[union-attr]
    assert len(server.requests) == 3


def test_slow_streams_in_many_deltas(client: anthropic.Anthropic) -> None:
    deltas = 0
    start = time.monotonic()
    with client.messages.stream(
        model=MODEL, max_tokens=100, messages=[{"role": "user", "content": "SLOW take your time"}]
    ) as stream:
        for event in stream:
            deltas += event.type == "content_block_delta"
        final = stream.get_final_message()
    assert deltas == 20
    assert time.monotonic() - start >= 0.15
    assert final.content[0].text == "echo: SLOW take your time"  # type: ignore[union-attr]


def test_log_file_and_session_id(client: anthropic.Anthropic, server: ScriptedModelServer) -> None:
    sid = "11111111-1111-4111-8111-111111111111"
    user_id = json.dumps({"device_id": "d", "account_uuid": "", "session_id": sid})
    ask(client, "hi", metadata={"user_id": user_id})
    ask(client, "no metadata")
    assert server.log_path is not None
    rows = [json.loads(line) for line in server.log_path.read_text().splitlines()]
    assert [r["sessionId"] for r in rows] == [sid, None]
    assert {"path", "sessionId", "messages", "model", "system", "tools"} <= rows[0].keys()
    assert session_id_from_metadata({"metadata": {"user_id": f"user_ab_account__session_{sid}"}}) == sid


def test_unknown_route_is_json_404(server: ScriptedModelServer) -> None:
    req = urllib.request.Request(server.base_url + "/v1/complete", data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req, timeout=5)
    assert info.value.code == 404
    assert json.loads(info.value.read())["type"] == "error"


def test_port_zero_picks_free_ports() -> None:
    with ScriptedModelServer() as a, ScriptedModelServer() as b:
        assert a.port != b.port and a.base_url.startswith("http://127.0.0.1:")


def test_a_planner_given_to_the_server_decides_the_reply() -> None:
    seen: list[int] = []

    def planner(messages: list[object]) -> tuple[str, list[dict[str, object]]]:
        seen.append(len(messages))
        return "normal", [{"type": "text", "text": f"planned after {len(messages)} message(s)"}]

    with ScriptedModelServer(planner=planner) as srv:
        client = anthropic.Anthropic(base_url=srv.base_url, api_key="anything", max_retries=0)
        msg = ask(client, "READ /x/y.ts")
    assert msg.content[0].text == "planned after 1 message(s)"  # type: ignore[union-attr]
    assert msg.stop_reason == "end_turn" and seen == [1]
