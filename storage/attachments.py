"""How CLI 2.1.328 sends attachment rows to the model (facts from its bundled JS).

An attachment row carries what the CLI rendered for it (``rendered``: a list of ``{content}``
messages) and the role it chose (``renderedRole``). These helpers answer the per-attachment
questions of :mod:`storage.apiform`.
"""

from __future__ import annotations

from typing import Any

REMINDER_OPEN = "<system-reminder>"
REMINDER_CLOSE = "</system-reminder>"

SENT_WHEN_BARE = frozenset({"queued_command", "poll_events", "plugin_note"})
"""With ``--bare`` / ``CLAUDE_CODE_SIMPLE`` every other attachment is left out of the request."""

_JOIN_AS_ROW_USER_TYPES = frozenset({"nested_memory", "file", "directory"})
_JOIN_AS_ROW_TYPES = frozenset({"account_memory_recall", "cowork_memory_context", "queued_command"})
_PROMPT_HOOKS = frozenset({"prompt.submit", "prompt.mention"})


def is_sent_when_bare(attachment: dict[str, Any]) -> bool:
    return attachment.get("type") in SENT_WHEN_BARE


def reminder_body(text: str) -> str:
    """The text without its ``<system-reminder>`` wrapper (and the newlines just inside it)."""
    if not (text.startswith(REMINDER_OPEN) and text.endswith(REMINDER_CLOSE)):
        return text
    start = len(REMINDER_OPEN)
    if text[start : start + 1] == "\n":
        start += 1
    end = len(text) - len(REMINDER_CLOSE)
    if end > start and text[end - 1] == "\n":
        end -= 1
    return text[start:end]


def wrap_reminder(text: str) -> str:
    return f"{REMINDER_OPEN}\n{text}\n{REMINDER_CLOSE}"


def joins_as_user_row(attachment: dict[str, Any]) -> bool:
    """Attachments that join a user message the way a user row does (separate blocks, newline seam)
    rather than folding into a tool result that ends it."""
    kind = attachment.get("type")
    if kind in _JOIN_AS_ROW_USER_TYPES or kind in _JOIN_AS_ROW_TYPES:
        return True
    if kind == "hook_additional_context":
        return attachment.get("hookName") in _PROMPT_HOOKS
    if kind == "plugin_note":
        return attachment.get("sentAs") == "beside"
    return False


def _fold_into_result(result: dict[str, Any], texts: list[dict[str, Any]]) -> dict[str, Any] | None:
    content = result.get("content")
    if content is None or isinstance(content, str):
        parts = [(content or "").strip(), *(str(t.get("text", "")).strip() for t in texts)]
        return {**result, "content": "\n\n".join(p for p in parts if p)}
    if isinstance(content, list) and not any(
        isinstance(b, dict) and b.get("type") in ("tool_reference", "search_result") for b in content
    ):
        body = list(content)
        if body and isinstance(body[-1], dict) and body[-1].get("type") == "text":
            body[-1] = {**body[-1], "text": str(body[-1].get("text", "")) + "\n"}
        return {**result, "content": body + texts}
    return None


def fold_beside_tool_result(existing: list[Any], blocks: list[Any]) -> list[Any]:
    """Add an attachment's blocks to a user message: when the message ends in a tool result and the
    attachment is all text, the text goes inside that result; otherwise it is appended."""
    last = existing[-1] if existing else None
    if not (isinstance(last, dict) and last.get("type") == "tool_result"):
        return existing + blocks
    if not blocks or not all(isinstance(b, dict) and b.get("type") == "text" for b in blocks):
        return existing + blocks
    folded = _fold_into_result(last, blocks)
    return existing + blocks if folded is None else [*existing[:-1], folded]
