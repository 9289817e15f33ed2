"""Text of one transcript line, and the uuid references found in it with their columns."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from storage.fileopen import open_regular
from storage.rows import Row

UUIDISH = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
REF_KEYS = (
    "parentUuid",
    "logicalParentUuid",
    "sourceToolAssistantUUID",
    "leafUuid",
    "messageUuid",
    "uuid",
    "tool_use_id",
    "id",
    "agentId",
    "toolUseId",
    "sessionId",
    "headUuid",
    "anchorUuid",
    "tailUuid",
)
REF_RE = re.compile(r'"(?P<key>' + "|".join(REF_KEYS) + r')":"(?P<value>[^"\\]{1,200})"')
ANY_UUID_RE = re.compile(UUIDISH)


@dataclass(frozen=True)
class Reference:
    key: str
    value: str
    start: int
    """UTF-16 column of the value's first character."""
    end: int


def read_line(path: Path, row: Row) -> str:
    with open_regular(path) as fh:
        fh.seek(row.offset)
        return fh.read(row.length).decode("utf-8", "replace")


def utf16_col(text: str, index: int) -> int:
    """Column in UTF-16 units of the Python index `index` in `text`."""
    prefix = text[:index]
    return len(prefix) + sum(1 for ch in prefix if ord(ch) > 0xFFFF)


def references(text: str) -> list[Reference]:
    """Link fields in a line (and bare uuids inside arrays such as preserved uuid lists)."""
    refs: list[Reference] = []
    taken: set[int] = set()
    for m in REF_RE.finditer(text):
        start = m.start("value")
        taken.add(start)
        refs.append(Reference(m["key"], m["value"], utf16_col(text, start), utf16_col(text, m.end("value"))))
    for m in ANY_UUID_RE.finditer(text):
        if m.start() not in taken:
            refs.append(Reference("", m.group(), utf16_col(text, m.start()), utf16_col(text, m.end())))
    return refs


def reference_at(text: str, col: int) -> Reference | None:
    for ref in references(text):
        if ref.start <= col <= ref.end:
            return ref
    return None
