"""Helpers for the agent-turn tests (no tests here): normalising conversations, reading rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REMINDER = "<system-reminder>"


def _block(block: Any, drop: frozenset[str] = frozenset()) -> dict[str, Any] | None:
    if isinstance(block, str):
        block = {"type": "text", "text": block}
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind == "text":
        text = str(block.get("text", ""))
        if text in drop:
            return None
        return None if text.lstrip().startswith(REMINDER) else {"type": "text", "text": text.rstrip("\n")}
    if kind == "tool_use":
        return {"type": "tool_use", "id": block.get("id"), "name": block.get("name"), "input": block.get("input")}
    if kind == "tool_result":
        return {
            "type": "tool_result",
            "tool_use_id": block.get("tool_use_id"),
            "content": block.get("content"),
            "is_error": bool(block.get("is_error")),
        }
    return {"type": kind}


def conversation(messages: list[dict[str, Any]], drop: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """Roles and blocks that carry the conversation: system messages and reminder texts (context
    both sides add on their own) dropped, string content as text blocks, same-role runs merged."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.get("role") == "system":
            continue
        content = m.get("content")
        raw = [content] if isinstance(content, str) else list(content or [])
        blocks = [b for b in (_block(x, drop) for x in raw) if b is not None]
        if not blocks:
            continue
        if out and out[-1]["role"] == m["role"]:
            out[-1]["content"] += blocks
        else:
            out.append({"role": m["role"], "content": blocks})
    return out


def rows(path: Path | str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
