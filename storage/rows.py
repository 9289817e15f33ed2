"""The in-memory row model: only the link fields of a transcript line, never its body."""

from __future__ import annotations

import json
import sys
from typing import Any

import msgspec

CHAIN_TYPES = frozenset({"user", "assistant", "attachment", "system"})
"""Row types a conversation chain is made of (see `Row.is_chain_row`)."""
MESSAGE_TYPES = frozenset({"user", "assistant"})


class Row(msgspec.Struct, array_like=True, gc=False):
    """One parsed line. `line` is 0-based; `offset`/`length` locate the line's bytes (without `\\n`).

    A msgspec struct kept as an array (`array_like`): the index database holds millions of them, and stored
    as arrays they take 22 MB for the 117k rows of the 311 MiB bench folder (50 MB with field names), and
    are written 3x and read back 4x faster. Not tracked by the garbage collector (`gc=False`): a row holds
    only strings, numbers and tuples of them."""

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
    spawned_agent: str | None = None
    """For a tool result of an Agent call: `toolUseResult.agentId`, the subagent it started."""
    order: int = -1
    """Position used for file order; a duplicate uuid keeps its first row's position."""

    @property
    def is_chain_row(self) -> bool:
        return self.type in CHAIN_TYPES and self.uuid is not None

    @property
    def is_message(self) -> bool:
        return self.type in MESSAGE_TYPES

    @property
    def is_local_command(self) -> bool:
        """A slash command's output row (`system`, subtype `local_command`): sent to the model as user text."""
        return self.type == "system" and self.subtype == "local_command"

    @property
    def is_compact_boundary(self) -> bool:
        return self.type == "system" and self.subtype == "compact_boundary"

    @property
    def is_tool_result(self) -> bool:
        return bool(self.tool_result_ids)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def parent_link(value: Any) -> str | None:
    """`parentUuid` as the CLI follows it: a value JavaScript takes as false (null, absent, `""`, `false`,
    `0`) makes a root; any other value that is not a string (a number, `true`, an object or array, even
    an empty one) is a parent no row has, so the walk goes on by the timestamp fallback as for a dangling
    uuid (seen with CLI 2.1.328, tests/corpus/mutations). Such a parent reads `<not a uuid: ...>`, which
    no row's uuid can equal."""
    if value.__class__ is str:
        return value or None
    if value is None or value is False or (value.__class__ in (int, float) and (value == 0 or value != value)):
        return None
    try:
        shown = json.dumps(value, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):
        shown = type(value).__name__
    return f"<not a uuid: {shown}>"


_intern = sys.intern


def row_from_entry(entry: dict[str, Any], line: int, offset: int, length: int) -> Row:
    """Keep the link fields of one decoded line (hot path: one dict lookup per field)."""
    get = entry.get
    etype = get("type")
    uid = get("uuid")
    parent = get("parentUuid")
    sid = get("sessionId")
    ts = get("timestamp")
    row = Row(
        line,
        offset,
        length,
        etype if etype.__class__ is str else None,
        uid if uid.__class__ is str else None,
        parent if parent.__class__ is str and parent else parent_link(parent),
        order=line,
        timestamp=ts if ts.__class__ is str else None,
        session_id=_intern(sid) if sid.__class__ is str else None,
    )
    if get("isSidechain") is True:
        row.sidechain = True
    for key in _RARE_VIEW & entry.keys():
        _RARE_KEYS[key](row, entry[key])
    message = get("message")
    if message.__class__ is dict:
        mid = message.get("id")
        if mid.__class__ is str:
            row.message_id = mid
        content = message.get("content")
        if content.__class__ is list:
            _take_blocks(row, content)
            if row.tool_result_ids:
                result = get("toolUseResult")
                if result.__class__ is dict:
                    row.spawned_agent = _str(result.get("agentId"))
    if row.subtype == "compact_boundary":
        take_compact(row, get("compactMetadata"))
    return row


def _take_blocks(row: Row, content: list[Any]) -> None:
    uses: list[str] = []
    results: list[str] = []
    for block in content:
        if block.__class__ is not dict:
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


def take_compact(row: Row, meta: Any) -> None:
    if not isinstance(meta, dict):
        return
    seg = found if isinstance(found := meta.get("preservedSegment"), dict) else {}
    msgs = found if isinstance(found := meta.get("preservedMessages"), dict) else {}
    uuids = found if isinstance(found := msgs.get("uuids"), list) else []
    anchor = _str(seg.get("anchorUuid")) or _str(msgs.get("anchorUuid"))
    if anchor or uuids:
        row.preserved = (
            anchor,
            _str(seg.get("headUuid")),
            _str(seg.get("tailUuid")),
            tuple(u for u in uuids if isinstance(u, str)),
        )


def _set_str(attr: str) -> Any:
    def setter(row: Row, value: Any) -> None:
        if isinstance(value, str):
            setattr(row, attr, value)

    return setter


def _set_true(attr: str) -> Any:
    def setter(row: Row, value: Any) -> None:
        if value is True:
            setattr(row, attr, True)

    return setter


def _set_fork(row: Row, fork: Any) -> None:
    if isinstance(fork, dict):
        row.forked_from = (str(fork.get("sessionId") or ""), str(fork.get("messageUuid") or ""))


_RARE_KEYS: dict[str, Any] = {
    "logicalParentUuid": _set_str("logical_parent"),
    "subtype": _set_str("subtype"),
    "leafUuid": _set_str("leaf_uuid"),
    "agentId": _set_str("agent_id"),
    "isMeta": _set_true("is_meta"),
    "isCompactSummary": _set_true("is_compact_summary"),
    "sourceToolAssistantUUID": _set_str("source_tool_assistant"),
    "forkedFrom": _set_fork,
}
_RARE_VIEW = _RARE_KEYS.keys()
