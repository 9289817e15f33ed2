"""The in-memory row model: only the link fields of a transcript line, never its body."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CHAIN_TYPES = frozenset({"user", "assistant", "attachment", "system"})
MESSAGE_TYPES = frozenset({"user", "assistant"})


@dataclass(slots=True)
class Row:
    """One parsed line. `line` is 0-based; `offset`/`length` locate the line's bytes (without `\\n`)."""

    line: int
    offset: int
    length: int
    type: str | None
    uuid: str | None = None
    parent: str | None = None
    logical_parent: str | None = None
    subtype: str | None = None
    timestamp: str | None = None
    sidechain: bool = False
    session_id: str | None = None
    message_id: str | None = None
    tool_use_ids: tuple[str, ...] = ()
    tool_result_ids: tuple[str, ...] = ()
    source_tool_assistant: str | None = None
    leaf_uuid: str | None = None
    agent_id: str | None = None
    is_meta: bool = False
    is_compact_summary: bool = False
    forked_from: tuple[str, str] | None = None
    preserved: tuple[str | None, str | None, str | None, tuple[str, ...]] | None = None
    """For a compact boundary: (anchorUuid, headUuid, tailUuid, preserved uuids)."""
    order: int = field(default=-1)
    """Position used for file order; a duplicate uuid keeps its first row's position."""

    @property
    def is_chain_row(self) -> bool:
        return self.type in CHAIN_TYPES and self.uuid is not None

    @property
    def is_message(self) -> bool:
        return self.type in MESSAGE_TYPES

    @property
    def is_compact_boundary(self) -> bool:
        return self.type == "system" and self.subtype == "compact_boundary"

    @property
    def is_tool_result(self) -> bool:
        return bool(self.tool_result_ids)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def row_from_entry(entry: dict[str, Any], line: int, offset: int, length: int) -> Row:
    """Keep the link fields of one decoded line."""
    etype = _str(entry.get("type"))
    row = Row(line=line, offset=offset, length=length, type=etype, order=line)
    row.uuid = _str(entry.get("uuid"))
    row.parent = _str(entry.get("parentUuid"))
    row.logical_parent = _str(entry.get("logicalParentUuid"))
    row.subtype = _str(entry.get("subtype"))
    row.timestamp = _str(entry.get("timestamp"))
    row.sidechain = entry.get("isSidechain") is True
    row.session_id = _str(entry.get("sessionId"))
    row.leaf_uuid = _str(entry.get("leafUuid"))
    row.agent_id = _str(entry.get("agentId"))
    row.is_meta = entry.get("isMeta") is True
    row.is_compact_summary = entry.get("isCompactSummary") is True
    row.source_tool_assistant = _str(entry.get("sourceToolAssistantUUID"))
    fork = entry.get("forkedFrom")
    if isinstance(fork, dict):
        row.forked_from = (str(fork.get("sessionId") or ""), str(fork.get("messageUuid") or ""))
    message = entry.get("message")
    if isinstance(message, dict):
        row.message_id = _str(message.get("id"))
        content = message.get("content")
        if isinstance(content, list):
            uses: list[str] = []
            results: list[str] = []
            for block in content:
                if not isinstance(block, dict):
                    continue
                btype = block.get("type")
                if btype == "tool_use" or btype == "server_tool_use":
                    bid = block.get("id")
                    if isinstance(bid, str):
                        uses.append(bid)
                elif btype == "tool_result":
                    bid = block.get("tool_use_id")
                    if isinstance(bid, str):
                        results.append(bid)
            if uses:
                row.tool_use_ids = tuple(uses)
            if results:
                row.tool_result_ids = tuple(results)
    if row.subtype == "compact_boundary":
        meta = entry.get("compactMetadata")
        if isinstance(meta, dict):
            seg = meta.get("preservedSegment") if isinstance(meta.get("preservedSegment"), dict) else {}
            msgs = meta.get("preservedMessages") if isinstance(meta.get("preservedMessages"), dict) else {}
            uuids = msgs.get("uuids") if isinstance(msgs.get("uuids"), list) else []
            anchor = _str(seg.get("anchorUuid")) or _str(msgs.get("anchorUuid"))
            if anchor or uuids:
                row.preserved = (
                    anchor,
                    _str(seg.get("headUuid")),
                    _str(seg.get("tailUuid")),
                    tuple(u for u in uuids if isinstance(u, str)),
                )
    return row
