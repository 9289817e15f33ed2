"""API-form rules found by resuming our own files with the real CLI (tests/test_agent_newuser.py):
the model decides whether system reminders go as system messages; task notifications are framed."""

from __future__ import annotations

import json
from pathlib import Path

from storage.apiform import supports_system_messages
from storage.resume import last_model, resume


def _write(tmp_path: Path, model: str, rows_extra: list[dict] | None = None) -> Path:
    rows = [
        {"parentUuid": None, "type": "user", "uuid": "u1", "message": {"role": "user", "content": "hello"}},
        {
            "parentUuid": "u1",
            "type": "attachment",
            "uuid": "t1",
            "attachment": {"type": "date", "date": "2026-11-29"},
            "rendered": [{"content": "<system-reminder>\nToday's date is 2026-11-29.\n</system-reminder>"}],
            "renderedRole": "system",
        },
        {
            "parentUuid": "t1",
            "type": "assistant",
            "uuid": "a1",
            "message": {"role": "assistant", "id": "m1", "model": model, "content": [{"type": "text", "text": "hi"}]},
        },
        *(rows_extra or []),
    ]
    p = tmp_path / "s.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def test_models_with_and_without_system_messages() -> None:
    assert supports_system_messages("claude-opus-5-5") and supports_system_messages("claude-sonnet-5")
    assert not supports_system_messages("claude-sonnet-4-5") and not supports_system_messages("claude-opus-4-7")
    # the real CLI resumed a claude-opus-4-8 session with system messages (tests/corpus/versions/models.json)
    assert supports_system_messages("claude-opus-4-8")
    assert supports_system_messages(None) and supports_system_messages("some-other-model")


def test_system_reminders_follow_the_sessions_model(tmp_path: Path) -> None:
    new = resume(_write(tmp_path, "claude-opus-5-5"), effort_statement=True).messages
    assert [m["role"] for m in new] == ["user", "system", "assistant"]
    assert new[1]["content"][0]["text"] == "Today's date is 2026-11-29."
    old = resume(_write(tmp_path, "claude-haiku-4-5"), effort_statement=True).messages
    assert [m["role"] for m in old] == ["user", "assistant"]
    assert old[0]["content"][0]["text"].startswith("<system-reminder>\nToday's")
    assert last_model(tmp_path / "s.jsonl") == "claude-haiku-4-5"
    # claude-sonnet-4-5 took no system messages either, but CLI 2.1.332 has it retired since 2026-11-30: such a
    # session goes on with the default model, which takes them
    retired = resume(_write(tmp_path, "claude-sonnet-4-5"), effort_statement=True).messages
    assert [m["role"] for m in retired] == ["user", "system", "assistant"]
    assert last_model(tmp_path / "s.jsonl") is None


def test_task_notification_is_framed(tmp_path: Path) -> None:
    note = {
        "parentUuid": "a1",
        "type": "user",
        "uuid": "n1",
        "origin": {"kind": "task-notification"},
        "message": {"role": "user", "content": "<task-notification>\n<status>completed</status>\n</task-notification>"},
    }
    messages = resume(_write(tmp_path, "claude-opus-5-5", [note])).messages
    text = (
        messages[-2]["content"][0]["text"]
        if messages[-1]["role"] == "assistant"
        else messages[-1]["content"][0]["text"]
    )
    assert text.startswith("<system-reminder>\n[SYSTEM NOTIFICATION - NOT USER INPUT]\n")
    assert text.endswith("</task-notification>\n</system-reminder>")
