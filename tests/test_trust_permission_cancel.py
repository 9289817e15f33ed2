"""A turn cancelled while it waits on a permission prompt ends as cancelled, not as a denial.

Over the real server (`session-lsp serve --stdio`, the scripted test model): the editor is asked
(`sessions/permission`) and does not answer. Before, `_ask_permission` turned the cancel into a "deny", and the turn
ended `stopReason: "denied"`, `cancelled: false`, the editor's prompt left open. Now the turn ends as every cancel
does (`cancelled: true`, `stopReason: "cancelled"`), the server withdraws its prompt (`$/cancelRequest` for it), and
the transcript records the interruption as the CLI records an Esc during tool use: the unanswered call rejected, then
`[Request interrupted by user for tool use]`. A real "deny" answer stays a denial.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import CORPUS
from rawlsp import LIVENESS, RawServer
from scripted_api import ScriptedModelServer, scripted_provider

from server.agent.cancel import CancelToken, TurnCancelled
from server.agent.events import TurnEvent
from server.agent.loop import run_turn
from server.agent.permissions import Decision, PermissionAsk
from server.agent.request import TurnRequest
from storage.recorder import INTERRUPTED_FOR_TOOL_USE, REJECTED_TOOL_USE
from storage.resume import resume

REQUEST_CANCELLED = -32800


@pytest.fixture
def work(tmp_path: Path) -> dict[str, Path]:
    projects = tmp_path / "projects"
    shutil.copytree(CORPUS / "projects", projects)
    cwd = tmp_path / "work"
    cwd.mkdir()
    return {"projects": projects, "cwd": cwd}


def start_turn(server: RawServer, work: dict[str, Path], prompt: str) -> dict[str, Any]:
    """Send the turn, and wait until the server asks the editor; the permission request is returned."""
    params = {"prompt": prompt, "provider": "anthropic", "cwd": str(work["cwd"]), "mode": "new", "askPermission": True}
    server.request("sessions/runTurn", params, msg_id="turn")
    deadline = time.monotonic() + LIVENESS
    while not any(r["method"] == "sessions/permission" for r in server.requests):
        assert time.monotonic() < deadline, f"never asked; stderr: {server.stderr[-2000:]!r}"
        time.sleep(0.05)
    return next(r for r in server.requests if r["method"] == "sessions/permission")


def withdrawn(server: RawServer, asked: dict[str, Any]) -> bool:
    deadline = time.monotonic() + LIVENESS
    while time.monotonic() < deadline:
        if any(
            n["method"] == "$/cancelRequest" and n["params"]["id"] == asked["id"] for n in list(server.notifications)
        ):
            return True
        time.sleep(0.05)
    return False


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def assert_interrupted_at_the_call(path: Path, asked: dict[str, Any]) -> None:
    """As the CLI records an Esc during tool use: the asked call rejected, then the interruption; a resume sends it."""
    written = [r for r in rows(path) if r.get("type") in ("user", "assistant")]
    result = written[-2]["message"]["content"][0]
    assert result == {
        "type": "tool_result",
        "tool_use_id": asked["params"]["toolUseId"],
        "content": REJECTED_TOOL_USE,
        "is_error": True,
    }
    assert written[-2]["toolUseResult"] == "User rejected tool use"
    assert written[-1]["message"]["content"] == [{"type": "text", "text": INTERRUPTED_FOR_TOOL_USE}]
    messages = resume(path).messages
    assert messages[-2]["content"][0]["content"] == REJECTED_TOOL_USE


def session_file(server: RawServer, work: dict[str, Path]) -> Path:
    listed = server.call("sessions/list", {"cwd": str(work["cwd"])})["result"]
    return Path(listed["sessions"][0]["path"])


def test_cancel_request_during_the_prompt_withdraws_it_and_records_the_interruption(work: dict[str, Path]) -> None:
    with RawServer(hold=("sessions/permission",)) as server:
        server.initialize(work["projects"], watch=False)
        asked = start_turn(server, work, "BASH touch never")
        server.notify("$/cancelRequest", {"id": "turn"})
        answer = server.answer("turn", LIVENESS)
        assert answer.get("error", {}).get("code") == REQUEST_CANCELLED, answer
        assert withdrawn(server, asked), "the editor's prompt was left open"
        assert not (work["cwd"] / "never").exists()
        assert_interrupted_at_the_call(session_file(server, work), asked)


def test_shutdown_during_the_prompt_withdraws_it_and_records_the_interruption(work: dict[str, Path]) -> None:
    """Shutdown cancels running turns (pygls answers their requests as cancelled, and cancels the prompt's request
    too): no denial is reported, the prompt is withdrawn, the interruption recorded."""
    with RawServer(hold=("sessions/permission",)) as server:
        server.initialize(work["projects"], watch=False)
        asked = start_turn(server, work, "BASH touch never")
        server.request("shutdown", None, msg_id="down")
        answer = server.answer("turn", LIVENESS)
        assert answer.get("error", {}).get("code") == REQUEST_CANCELLED, answer
        assert withdrawn(server, asked), "the editor's prompt was left open"
        server.answer("down", LIVENESS)
        server.notify("exit")
        assert server.wait_exit()[0] == 0
        assert b"denying" not in server.stderr, server.stderr.decode()[-2000:]
        assert not (work["cwd"] / "never").exists()
        path = next(p for p in work["projects"].glob("*/*.jsonl") if str(work["cwd"]) in p.read_text())
        assert_interrupted_at_the_call(path, asked)


def test_a_deny_answer_stays_a_denial(work: dict[str, Path]) -> None:
    with RawServer(hold=("sessions/permission",)) as server:
        server.initialize(work["projects"], watch=False)
        asked = start_turn(server, work, "BASH touch never")
        server.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"decision": "deny"}})
        result = server.answer("turn", LIVENESS)["result"]
        assert result["cancelled"] is False and result["stopReason"] == "denied", result
        assert not (work["cwd"] / "never").exists()
        assert_interrupted_at_the_call(Path(result["path"]), asked)


# The turn's own report (what `sessions/runTurn` answers with when the turn ends by itself, and what
# `session-lsp turn --json` and a store turn get): the ask the server makes, cancelled while it waits.


def cancelled_at_the_prompt(
    work: dict[str, Path], model: ScriptedModelServer, answer: Decision | None
) -> tuple[Any, list[TurnEvent]]:
    token = CancelToken()
    events: list[TurnEvent] = []

    def ask(asked: PermissionAsk) -> Decision:
        token.cancel()  # the cancel comes while the person is asked
        if answer is None:
            raise TurnCancelled()  # as `_ask_permission` does now
        return answer  # as it did before ("deny"), or an answer that came with the cancel

    request = TurnRequest(prompt="BASH touch never", cwd=str(work["cwd"]), projects_dir=work["projects"])
    provider = scripted_provider(base_url=model.base_url)
    result = run_turn(request, on_event=events.append, cancel=token, ask=ask, provider=provider)
    return result, events


@pytest.mark.parametrize("answer", [None, "deny", "allow"])
def test_the_turn_reports_cancelled_not_denied(
    work: dict[str, Path], model: ScriptedModelServer, answer: Decision | None
) -> None:
    result, events = cancelled_at_the_prompt(work, model, answer)
    assert result.cancelled is True and result.stop_reason == "cancelled", result.to_json()
    assert not (work["cwd"] / "never").exists()
    decided = [e.data for e in events if e.kind == "permission"]
    assert [d["decision"] for d in decided] == ["cancelled"]
    assert_interrupted_at_the_call(Path(result.path), {"params": {"toolUseId": decided[0]["id"]}})
