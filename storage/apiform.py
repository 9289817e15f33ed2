"""The API form of a chain: the conversation the model receives when the CLI resumes it.

Rows become messages (user and assistant rows by their message, attachments by what the CLI
rendered for them, a compact boundary as an empty system message); blocks of one response merge;
tool calls without results and results without calls drop out; thinking-only and blank
assistant rows drop out; within a turn, attachments meant for the user go before the prompt and
system text after it; consecutive messages of one role merge; an interrupted end gets the
synthetic message the CLI adds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from storage.chain import Chain
from storage.reader import read_entries
from storage.rows import Row

NO_RESPONSE = "No response requested."
CONTINUE = "Continue from where you left off."

# Sort keys inside one turn (between assistant messages).
_TOOL_RESULT, _USER_ATTACHMENT, _USER, _SYSTEM = 0, 1, 2, 3


@dataclass
class _Msg:
    role: str
    content: list[Any]
    kind: int = _USER
    message_id: str | None = None
    uuids: list[str] = field(default_factory=list)


def _as_blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return list(content)
    return []


def _rendered_blocks(rendered: Any) -> list[Any]:
    blocks: list[Any] = []
    if not isinstance(rendered, list):
        return blocks
    for part in rendered:
        content = part.get("content") if isinstance(part, dict) else part
        blocks.extend(_as_blocks(content))
    return blocks


def _is_blank_assistant(content: list[Any]) -> bool:
    """Only thinking blocks, or only whitespace text."""
    for block in content:
        if not isinstance(block, dict):
            return False
        btype = block.get("type")
        if btype in ("thinking", "redacted_thinking"):
            continue
        if btype == "text" and not str(block.get("text", "")).strip():
            continue
        return False
    return True


def _row_message(row: Row, entry: dict[str, Any]) -> _Msg | None:
    uid = [row.uuid] if row.uuid else []
    if row.type in ("user", "assistant"):
        message = entry.get("message")
        if not isinstance(message, dict):
            return None
        blocks = _as_blocks(message.get("content"))
        if row.type == "assistant":
            return _Msg("assistant", blocks, message_id=row.message_id, uuids=uid)
        kind = _TOOL_RESULT if row.tool_result_ids else _USER
        return _Msg("user", blocks, kind=kind, uuids=uid)
    if row.type == "attachment":
        role = entry.get("renderedRole")
        blocks = _rendered_blocks(entry.get("rendered"))
        if role == "user" and blocks:
            return _Msg("user", blocks, kind=_USER_ATTACHMENT, uuids=uid)
        if role == "system" and blocks:
            return _Msg("system", blocks, kind=_SYSTEM, uuids=uid)
        return None
    if row.is_compact_boundary:
        return _Msg("system", [], kind=_SYSTEM, uuids=uid)
    return None


def _pair_tools(msgs: list[_Msg]) -> list[_Msg]:
    """Drop tool_use blocks nobody answered and tool_result blocks whose call is gone."""
    answered = {
        b.get("tool_use_id")
        for m in msgs
        if m.role == "user"
        for b in m.content
        if isinstance(b, dict) and b.get("type") == "tool_result"
    }
    kept: list[_Msg] = []
    for m in msgs:
        if m.role == "assistant":
            m.content = [
                b
                for b in m.content
                if not (isinstance(b, dict) and b.get("type") == "tool_use" and b.get("id") not in answered)
            ]
            if not m.content or _is_blank_assistant(m.content):
                continue
        kept.append(m)
    called = {
        b.get("id")
        for m in kept
        if m.role == "assistant"
        for b in m.content
        if isinstance(b, dict) and b.get("type") == "tool_use"
    }
    out: list[_Msg] = []
    for m in kept:
        if m.kind == _TOOL_RESULT:
            m.content = [
                b
                for b in m.content
                if not (isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id") not in called)
            ]
            if not m.content:
                continue
        out.append(m)
    return out


def _order_turns(msgs: list[_Msg]) -> list[_Msg]:
    """Inside each stretch between assistant messages: results, user attachments, prompts, system."""
    out: list[_Msg] = []
    stretch: list[_Msg] = []
    for m in msgs + [_Msg("assistant", [])]:
        if m.role == "assistant":
            out.extend(sorted(stretch, key=lambda x: x.kind))
            stretch = []
            out.append(m)
        else:
            stretch.append(m)
    return out[:-1]


def _join_at_seam(a: list[Any], b: list[Any]) -> list[Any]:
    """Join two user contents; text meeting text across the seam gets a newline after it."""
    if a and b and _is_text(a[-1]) and _is_text(b[0]):
        return [*a[:-1], {**a[-1], "text": a[-1].get("text", "") + "\n"}, *b]
    return a + b


def _is_text(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "text"


def _merge(msgs: list[_Msg]) -> list[_Msg]:
    out: list[_Msg] = []
    for m in msgs:
        prev = out[-1] if out else None
        same_response = m.role == "assistant" and prev is not None and prev.role == "assistant" and (
            m.message_id is not None and m.message_id == prev.message_id
        )
        if prev is not None and (same_response or (m.role == prev.role and m.role != "assistant")):
            prev.content = _join_at_seam(prev.content, m.content) if m.role == "user" else prev.content + m.content
            prev.uuids += m.uuids
            if m.kind == _TOOL_RESULT:
                prev.kind = _TOOL_RESULT
            continue
        out.append(_Msg(m.role, list(m.content), m.kind, m.message_id, list(m.uuids)))
    return out


def _close_interrupted(msgs: list[_Msg]) -> None:
    last = next((m for m in reversed(msgs) if m.role != "system"), None)
    if last is None or last.role != "user":
        return
    if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in last.content):
        if msgs[-1] is last:
            last.content.append({"type": "text", "text": CONTINUE})
        else:
            msgs.append(_Msg("user", [{"type": "text", "text": CONTINUE}]))
    else:
        msgs.append(_Msg("assistant", [{"type": "text", "text": NO_RESPONSE}]))


def api_messages_from_entries(rows: list[Row], entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    msgs = [m for row, e in zip(rows, entries) if (m := _row_message(row, e)) is not None]
    msgs = _merge(_order_turns(_pair_tools(msgs)))
    _close_interrupted(msgs)
    return [{"role": m.role, "content": m.content} for m in msgs]


def api_messages(path: Path, chain: Chain) -> list[dict[str, Any]]:
    """The API form of `chain`, reading the rows' bodies from `path`."""
    return api_messages_from_entries(chain.rows, read_entries(path, chain.rows))
