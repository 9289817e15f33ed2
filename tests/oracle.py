"""Compare an API form with what the real CLI sent (api-requests.jsonl, system text scrubbed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCRUBBED_REMINDER = "<system-reminder>[scrubbed]"
ORACLE_TEXT_CUT = 500
"""The corpus recorder cut texts longer than this; a longer text of ours must start with it."""


def load_requests(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def oracle_requests(path: Path) -> dict[str, dict[str, Any]]:
    """sessionId -> its `ORACLE <id>` request: the last request whose last user text is that prompt."""
    found: dict[str, dict[str, Any]] = {}
    for req in load_requests(path):
        last = req["messages"][-1]
        texts = [b.get("text", "") for b in last["content"] if b.get("type") == "text"]
        for text in texts:
            if text.startswith("ORACLE "):
                found[text.split()[1]] = req
    return found


def _block_key(block: dict[str, Any], role: str) -> tuple[str, str]:
    btype = block.get("type", "")
    if btype == "text":
        text = block.get("text", "")
        return (btype, "" if role == "system" else text)
    if btype == "tool_use":
        return (btype, f"{block.get('id')}:{block.get('name')}")
    if btype == "tool_result":
        return (btype, str(block.get("tool_use_id")))
    return (btype, "")


def differences(ours: list[dict[str, Any]], oracle: list[dict[str, Any]], *, system_content: bool = True) -> list[str]:
    """Roles, block kinds, prompt and reply texts, tool call and result ids. Scrubbed reminders in
    the oracle match any text block; system messages compare by emptiness only."""
    diffs: list[str] = []
    if len(ours) != len(oracle):
        diffs.append(f"message count {len(ours)} != oracle {len(oracle)}")
    for i, (a, b) in enumerate(zip(ours, oracle)):
        if a["role"] != b["role"]:
            diffs.append(f"[{i}] role {a['role']} != {b['role']}")
            continue
        if a["role"] == "system":
            if system_content and bool(a["content"]) != bool(b["content"]):
                diffs.append(f"[{i}] system emptiness differs")
            continue
        if len(a["content"]) != len(b["content"]):
            diffs.append(f"[{i}] {a['role']} has {len(a['content'])} blocks, oracle {len(b['content'])}")
            continue
        for j, (x, y) in enumerate(zip(a["content"], b["content"])):
            kx, ky = _block_key(x, a["role"]), _block_key(y, b["role"])
            if ky == ("text", SCRUBBED_REMINDER) and kx[0] == "text":
                continue
            if len(ky[1]) == ORACLE_TEXT_CUT and kx[1].startswith(ky[1]):
                continue
            if kx != ky:
                diffs.append(f"[{i}.{j}] {kx} != oracle {ky}")
    return diffs


def condensed(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages in the shape of tests/corpus/extra/api-requests.jsonl: texts in full, tool calls by
    id and name, tool results by id and content (text blocks only), other blocks by kind."""
    out = []
    for message in messages:
        content = message.get("content")
        blocks = [content] if isinstance(content, str) and content else list(content or [])
        out.append({"role": message["role"], "content": [_condense_block(b) for b in blocks]})
    return out


def _condense_block(block: Any) -> dict[str, Any]:
    if isinstance(block, str):
        return {"type": "text", "text": block}
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": str(block.get("text", ""))}
    if kind == "tool_use":
        return {"type": "tool_use", "id": block.get("id"), "name": block.get("name")}
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            content = [
                {"type": "text", "text": str(b.get("text", ""))} if b.get("type") == "text" else {"type": b.get("type")}
                for b in content
            ]
        return {"type": "tool_result", "tool_use_id": block.get("tool_use_id"), "content": content}
    return {"type": kind}


def exact_differences(ours: list[dict[str, Any]], oracle: list[dict[str, Any]]) -> list[str]:
    """Message by message, block by block, in the condensed shape (full texts, system included)."""
    a, b = condensed(ours), oracle
    diffs = [f"message count {len(a)} != oracle {len(b)}"] if len(a) != len(b) else []
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            ours_text, oracle_text = (json.dumps(v, ensure_ascii=False)[:300] for v in (x, y))
            diffs.append(f"[{i}] {ours_text} != oracle {oracle_text}")
    return diffs
