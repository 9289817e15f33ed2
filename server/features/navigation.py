"""Go to definition and find references on a transcript row, as plain functions over the index.

A position on a row names a reference (`parentUuid`, `logicalParentUuid`, `sourceToolAssistantUUID`,
`tool_use_id`, `leafUuid`, `messageUuid`, `agentId`, `sessionId`); its definition is the row, file
or subagent file it points to, looked up first in the same file, then in the whole index.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Protocol

from server.features.lines import read_line, reference_at
from server.features.outline import row_at_line
from server.features.tree import TreeView
from storage.rows import Row

Location = tuple[Path, int]
"""A file and a 0-based line."""


class Index(Protocol):
    @property
    def files(self) -> Mapping[Path, object]: ...

    def find_uuid(self, uuid: str) -> list[tuple[Path, Row]]: ...

    def children_of(self, uuid: str) -> list[tuple[Path, Row]]: ...

    def file_for_session(self, session_id: str) -> Path | None: ...


def _rows(hits: Iterable[tuple[Path, Row]]) -> list[Location]:
    return [(p, r.line) for p, r in hits]


def definition(
    path: Path, view: TreeView, index: Index, line: int, character: int, read: Callable[[Path, Row], str] = read_line
) -> list[Location]:
    """Where the reference under (line, character) points; [] when there is none."""
    row = row_at_line(view, line)
    if row is None:
        return []
    ref = reference_at(read(path, row), character)
    if ref is None or ref.key == "uuid":
        return []
    if ref.key in ("tool_use_id", "toolUseId") or ref.value.startswith(("toolu_", "srvtoolu_")):
        return _rows((path, r) for r in view.transcript.rows if ref.value in r.tool_use_ids)
    if ref.key == "agentId":
        return [(p, 0) for p in sorted(index.files) if p.name == f"agent-{ref.value}.jsonl"]
    if ref.key == "sessionId":
        if ref.value == (view.transcript.session_id or ""):
            return []
        target = index.file_for_session(ref.value)
        return [(target, 0)] if target is not None else []
    local = view.transcript.nodes.get(ref.value)
    return _rows([(path, local)] if local is not None else index.find_uuid(ref.value))


def references(path: Path, view: TreeView, index: Index, line: int, include_declaration: bool) -> list[Location]:
    """The rows pointing at the row on `line` (its children), and the row itself if asked."""
    row = row_at_line(view, line)
    if row is None or not row.uuid:
        return []
    hits = list(index.children_of(row.uuid))
    if include_declaration:
        hits.insert(0, (path, row))
    return _rows(hits)
