"""One transcript file in the index: identity, how far it was read, line offsets, link rows."""

from __future__ import annotations

import os
from array import array
from dataclasses import dataclass, field
from pathlib import Path

from storage.paths import AGENT_FILE_RE, is_session_file
from storage.reader import LineProblem, ReadState, read_transcript
from storage.rows import Row
from storage.transcript import Transcript

UNCHANGED, APPENDED, RELOADED, MISSING = "unchanged", "appended", "reloaded", "missing"


def identify(path: Path) -> tuple[str | None, str | None]:
    """(session id, agent id) from a path: `<sid>.jsonl` or `<sid>/subagents/[..]/agent-<id>.jsonl`."""
    if is_session_file(path):
        return path.stem, None
    m = AGENT_FILE_RE.match(path.name)
    if not m:
        return None, None
    for parent in path.parents:
        if parent.name == "subagents":
            sid = parent.parent.name
            return (sid if is_session_file(Path(sid + ".jsonl")) else None), m["id"]
    return None, m["id"]


@dataclass(eq=False)
class FileState:
    path: Path
    session_id: str | None = None
    agent_id: str | None = None
    inode: int = 0
    device: int = 0
    size: int = 0
    read: ReadState = field(default_factory=ReadState)
    line_offsets: array = field(default_factory=lambda: array("Q"))
    """Byte offset of the start of each line (0-based line -> offset), the torn tail included."""
    transcript: Transcript = field(init=False)
    provisional: Row | None = None
    torn: LineProblem | None = None
    _children: dict[str, list[Row]] | None = None

    def __post_init__(self) -> None:
        self.transcript = Transcript(path=self.path)
        if self.session_id is None and self.agent_id is None:
            self.session_id, self.agent_id = identify(self.path)

    @property
    def offset(self) -> int:
        return self.read.offset

    @property
    def problems(self) -> list[LineProblem]:
        return self.transcript.problems

    @property
    def is_subagent(self) -> bool:
        return self.agent_id is not None

    @property
    def line_count(self) -> int:
        return len(self.line_offsets)

    def children(self) -> dict[str, list[Row]]:
        """parent uuid -> child rows in this file (built on first use, dropped on change)."""
        if self._children is None:
            self._children = self.transcript.children()
        return self._children

    def reset(self) -> None:
        self.read = ReadState()
        self.line_offsets = array("Q")
        self.transcript = Transcript(path=self.path)
        self.provisional = None
        self.torn = None
        self._children = None

    def refresh(self) -> str:
        """Read what was appended; re-read a file that shrank or was replaced."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return MISSING
        replaced = self.inode and (st.st_ino != self.inode or st.st_dev != self.device)
        how = APPENDED
        if replaced or st.st_size < self.read.offset:
            self.reset()
            how = RELOADED
        elif st.st_size == self.read.offset and self.inode:
            return UNCHANGED
        self.inode, self.device = st.st_ino, st.st_dev
        self._drop_provisional()
        del self.line_offsets[self.read.line :]
        result = read_transcript(self.path, self.read, self.line_offsets)
        self.transcript.problems.extend(result.problems)
        self.transcript.add_rows(result.rows)
        self.provisional = result.provisional
        self.torn = self.transcript.torn_tail = result.unknown_tail
        self.read = result.state
        self.size = max(st.st_size, result.state.offset)
        self._children = None
        return how

    def _drop_provisional(self) -> None:
        """The unterminated last row is read again with the next update: take it out first."""
        row = self.provisional
        self.provisional = None
        t = self.transcript
        if row is None or not t.rows or t.rows[-1] is not row:
            return
        t.rows.pop()
        if row.uuid is not None and t.nodes.get(row.uuid) is row:
            if t.duplicates and t.duplicates[-1][1] is row:
                first = t.duplicates.pop()[0]
                t.nodes[row.uuid] = _latest(t, row.uuid) or first
            else:
                del t.nodes[row.uuid]


def _latest(t: Transcript, uid: str) -> Row | None:
    for row in reversed(t.rows):
        if row.uuid == uid:
            return row
    return None
