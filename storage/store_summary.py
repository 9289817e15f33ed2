"""The per-session summary a session store keeps for cheap listing, in the Agent SDK's shape.

The Claude Agent SDK lists store sessions from `{session_id, mtime, data}` summaries that a store
folds incrementally inside `append()` (its `fold_session_summary`). `fold_summary` derives the
same `data` from the same entries, so the SDK's `list_sessions_from_store()` reads our summaries
as it reads its own: `is_sidechain` and `created_at`/`cwd` (set once, from the first entry that
has them), `first_prompt` (the first real user prompt, 200 characters at most, or a slash
command's name as `command_fallback`), last-wins `custom_title`, `ai_title`, `last_prompt`,
`summary_hint`, `git_branch`, and `tag` (an empty tag clears it). `mtime` is left to the store.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any

SKIP_FIRST_PROMPT = re.compile(
    r"^(?:<local-command-stdout>|<session-start-hook>|<tick>|<goal>|"
    r"\[Request interrupted by user[^\]]*\]|"
    r"\s*<ide_opened_file>[\s\S]*</ide_opened_file>\s*$|"
    r"\s*<ide_selection>[\s\S]*</ide_selection>\s*$)"
)
COMMAND_NAME = re.compile(r"<command-name>(.*?)</command-name>")
LAST_WINS = {
    "customTitle": "custom_title",
    "aiTitle": "ai_title",
    "lastPrompt": "last_prompt",
    "summary": "summary_hint",
    "gitBranch": "git_branch",
}
PROMPT_LIMIT = 200


def epoch_ms(timestamp: Any) -> int | None:
    """An ISO-8601 timestamp as Unix epoch milliseconds, or None when it is not one."""
    if not isinstance(timestamp, str):
        return None
    text = timestamp[:-1] + "+00:00" if timestamp.endswith("Z") else timestamp
    try:
        return int(datetime.fromisoformat(text).timestamp() * 1000)
    except ValueError:
        return None


def _user_texts(entry: dict[str, Any]) -> list[str]:
    message = entry.get("message")
    if not isinstance(message, dict):
        return []
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return []
    return [
        b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]


def _take_first_prompt(data: dict[str, Any], entry: dict[str, Any]) -> None:
    if data.get("first_prompt_locked") or entry.get("type") != "user":
        return
    if entry.get("isMeta") is True or entry.get("isCompactSummary") is True:
        return
    for raw in _user_texts(entry):
        text = raw.replace("\n", " ").strip()
        if not text:
            continue
        command = COMMAND_NAME.search(text)
        if command:
            if not data.get("command_fallback"):
                data["command_fallback"] = command.group(1)
            continue
        if SKIP_FIRST_PROMPT.match(text):
            continue
        if len(text) > PROMPT_LIMIT:
            text = text[:PROMPT_LIMIT].rstrip() + "\u2026"
        data["first_prompt"] = text
        data["first_prompt_locked"] = True
        return


def fold_summary(data: dict[str, Any] | None, entries: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The summary data after `entries` were appended to a session whose data was `data`."""
    out = dict(data or {})
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        if "is_sidechain" not in out:
            out["is_sidechain"] = entry.get("isSidechain") is True
        if "created_at" not in out:
            ms = epoch_ms(entry.get("timestamp"))
            if ms is not None:
                out["created_at"] = ms
        if "cwd" not in out and isinstance(entry.get("cwd"), str) and entry["cwd"]:
            out["cwd"] = entry["cwd"]
        _take_first_prompt(out, entry)
        for src, dst in LAST_WINS.items():
            value = entry.get(src)
            if isinstance(value, str):
                out[dst] = value
        if entry.get("type") == "tag":
            tag = entry.get("tag")
            if isinstance(tag, str) and tag:
                out["tag"] = tag
            else:
                out.pop("tag", None)
    return out
