"""Typed partial decoding of a transcript line: only its link fields, the bodies skipped unread.

msgspec decodes a line straight into a struct that names only the fields the row model keeps; message
text, tool inputs and results are scanned past without building Python objects, which is what makes a
resume cost in proportion to the chain it returns rather than to the file. A line that does not fit the
expected shapes (a wrong type anywhere in a kept field) returns None, and the caller decodes it fully
with orjson, so unusual lines keep their exact lenient treatment.

Two kinds of line that orjson rejects are accepted, as the real CLI accepts them (it decodes the file
with replacement characters, then JSON.parse): bytes that are not UTF-8 inside a body msgspec skips (the CLI
2.1.328 sends them as U+FFFD; `tests/test_realcli_utf8.py`), and a number beyond a double (`1e999`,
Infinity to JSON.parse). `storage.reader.read_entries` decodes such bodies the same way. A line nested
deeper than msgspec goes (it raises `RecursionError` past about 1,000 levels, even in a body it skips) is left
to the full decode too, which reads it or reports it as a bad line (`storage.jsonline`).
"""

from __future__ import annotations

import sys
from typing import Any, Union

import msgspec
import orjson

from storage.rows import Row, take_compact


class _Block(msgspec.Struct, gc=False):
    type: Union[str, None] = None  # noqa: UP007 (msgspec reads these annotations at run time on 3.10)
    id: Union[str, None] = None  # noqa: UP007
    tool_use_id: Union[str, None] = None  # noqa: UP007


class _Message(msgspec.Struct, gc=False):
    id: Union[str, None] = None  # noqa: UP007
    content: Union[str, list[_Block], None] = None  # noqa: UP007


class _ToolResult(msgspec.Struct, gc=False):
    agentId: Any = None  # noqa: N815


_NULL = msgspec.Raw(b"null")


class _Links(
    msgspec.Struct,
    gc=False,
    rename={
        "parent": "parentUuid",
        "session_id": "sessionId",
        "sidechain": "isSidechain",
        "logical_parent": "logicalParentUuid",
        "leaf_uuid": "leafUuid",
        "agent_id": "agentId",
        "is_meta": "isMeta",
        "is_compact_summary": "isCompactSummary",
        "source_tool_assistant": "sourceToolAssistantUUID",
        "forked_from": "forkedFrom",
        "tool_use_result": "toolUseResult",
        "compact_metadata": "compactMetadata",
    },
):
    type: Union[str, None] = None  # noqa: UP007
    uuid: Union[str, None] = None  # noqa: UP007
    parent: Union[str, None] = None  # noqa: UP007
    session_id: Union[str, None] = None  # noqa: UP007
    timestamp: Union[str, None] = None  # noqa: UP007
    sidechain: Union[bool, None] = None  # noqa: UP007
    logical_parent: Union[str, None] = None  # noqa: UP007
    subtype: Union[str, None] = None  # noqa: UP007
    leaf_uuid: Union[str, None] = None  # noqa: UP007
    agent_id: Union[str, None] = None  # noqa: UP007
    is_meta: Union[bool, None] = None  # noqa: UP007
    is_compact_summary: Union[bool, None] = None  # noqa: UP007
    source_tool_assistant: Union[str, None] = None  # noqa: UP007
    forked_from: msgspec.Raw = _NULL
    tool_use_result: Union[_ToolResult, str, list[msgspec.Raw], None] = None  # noqa: UP007
    compact_metadata: msgspec.Raw = _NULL
    message: Union[_Message, None] = None  # noqa: UP007


_decode = msgspec.json.Decoder(_Links).decode
_DecodeError = msgspec.DecodeError
_intern = sys.intern


def row_from_line(raw: bytes | memoryview, line: int, offset: int) -> Row | None:
    """The row of one whole line (no BOM, no newline), or None when it needs a full decode to tell."""
    try:
        e = _decode(raw)
    except (_DecodeError, RecursionError):  # a body nested past msgspec's depth (about 1,000 levels) too
        return None
    sid = e.session_id
    row = Row(  # positional, in the field order of `Row` (checked by tests/test_linkdecode.py)
        line,
        offset,
        len(raw),
        e.type,
        e.uuid,
        e.parent or None,  # `""` is a root, as null is (see `storage.rows.parent_link`)
        e.logical_parent,
        e.subtype,
        e.timestamp,
        e.sidechain is True,
        _intern(sid) if sid is not None else None,
        None,
        (),
        (),
        e.source_tool_assistant,
        e.leaf_uuid,
        e.agent_id,
        e.is_meta is True,
        e.is_compact_summary is True,
        None,
        None,
        None,
        line,
    )
    try:
        message = e.message
        if message is not None:
            row.message_id = message.id
            content = message.content
            if content.__class__ is list and content:
                _take_blocks(row, content)
                result = e.tool_use_result
                if row.tool_result_ids and result.__class__ is _ToolResult:
                    agent = result.agentId
                    row.spawned_agent = agent if agent.__class__ is str else None
        if e.forked_from is not _NULL:
            fork = orjson.loads(memoryview(e.forked_from))
            if fork.__class__ is dict:
                row.forked_from = (str(fork.get("sessionId") or ""), str(fork.get("messageUuid") or ""))
        if row.subtype == "compact_boundary" and e.compact_metadata is not _NULL:
            take_compact(row, orjson.loads(memoryview(e.compact_metadata)))
    except orjson.JSONDecodeError:
        return None  # a kept value orjson rejects (an out-of-range number in it): decide in full
    return row


def _take_blocks(row: Row, content: list[_Block]) -> None:
    uses: list[str] = []
    results: list[str] = []
    for block in content:
        btype = block.type
        if btype == "tool_use" or btype == "server_tool_use":
            if block.id is not None:
                uses.append(block.id)
        elif btype == "tool_result":
            if block.tool_use_id is not None:
                results.append(block.tool_use_id)
    if uses:
        row.tool_use_ids = tuple(uses)
    if results:
        row.tool_result_ids = tuple(results)
