"""One transcript file loaded as link rows: the uuid map, metadata and the problems found."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from storage.access import as_path
from storage.reader import LineProblem, ReadResult, read_transcript
from storage.rows import Row


@dataclass
class Transcript:
    path: Path
    rows: list[Row] = field(default_factory=list)
    problems: list[LineProblem] = field(default_factory=list)
    torn_tail: LineProblem | None = None
    nodes: dict[str, Row] = field(default_factory=dict)
    """uuid -> row; a duplicate uuid maps to its later row, which keeps the first one's position."""
    duplicates: list[tuple[Row, Row]] = field(default_factory=list)
    """(first, later) pairs of rows that share a uuid."""

    @classmethod
    def load(cls, path: Path | str) -> Transcript:
        p = as_path(path)
        return cls.from_read(p, read_transcript(p))

    @classmethod
    def from_read(cls, path: Path, result: ReadResult) -> Transcript:
        t = cls(path=path, problems=list(result.problems), torn_tail=result.unknown_tail)
        t.add_rows(result.rows)
        return t

    @classmethod
    def from_rows(cls, path: Path, rows: Iterable[Row]) -> Transcript:
        t = cls(path=path)
        t.add_rows(rows)
        return t

    def add_rows(self, rows: Iterable[Row]) -> None:
        nodes = self.nodes
        for row in rows:
            self.rows.append(row)
            uid = row.uuid
            if uid is None:
                continue
            first = nodes.get(uid)
            if first is not None:
                row.order = first.order
                self.duplicates.append((first, row))
            nodes[uid] = row

    @property
    def session_id(self) -> str | None:
        for row in self.rows:
            if row.session_id:
                return row.session_id
        return None

    def chain_rows(self) -> list[Row]:
        """Rows that take part in trees (have a uuid and a chain type), latest value per uuid."""
        return [r for r in self.nodes.values() if r.is_chain_row]

    def children(self) -> dict[str, list[Row]]:
        """parent uuid -> child rows (latest value per uuid), in file order."""
        out: dict[str, list[Row]] = {}
        for row in sorted(self.nodes.values(), key=lambda r: r.order):
            if row.parent is not None:
                out.setdefault(row.parent, []).append(row)
        return out
