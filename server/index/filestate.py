"""One transcript file in the index: identity, how far it was read, where its lines start, link rows."""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from storage.countcache import fingerprint, fingerprint_open
from storage.fileopen import open_regular
from storage.folderstamp import RACY_NS
from storage.linechunks import FileSpan
from storage.linemarks import LineMarks
from storage.paths import AGENT_FILE_RE, is_session_file
from storage.reader import LineProblem, ReadResult, ReadState, folded, read_transcript
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
    mtime_ns: int = 0
    ctime_ns: int = 0
    """The inode's change time when read: a rewrite whose mtime was put back still changes it."""
    mtime_settled: bool = False
    """`mtime_ns` was older than `storage.folderstamp.RACY_NS` when the file was read: any later change shows in it."""
    print_: int = 0
    """Fingerprint of the head and of the bytes before `offset` (see `storage.countcache`)."""
    read: ReadState = field(default_factory=ReadState)
    line_marks: LineMarks = field(default_factory=LineMarks)
    """Where each line starts (0-based line -> offset), the torn tail included: sparse marks (`storage.linemarks`)."""
    transcript: Transcript = field(init=False)
    provisional: Row | None = None
    torn: LineProblem | None = None
    notes: list[LineProblem] = field(default_factory=list)
    """Lines only the CLI's lenient reading accepts (lone surrogates, invalid UTF-8)."""
    long_tail: tuple[int, int, int] | None = None
    """(size, mtime, ctime) of the file when a read stopped at an unfinished last line too long to keep
    (`reader.MAX_TAIL`): while the file is still so, it is unchanged."""
    _children: dict[str, list[Row]] | None = None

    def __post_init__(self) -> None:
        self.transcript = Transcript(path=self.path)
        if self.session_id is None and self.agent_id is None:
            self.session_id, self.agent_id = identify(self.path)

    @property
    def offset(self) -> int:
        return self.read.offset

    @property
    def identity(self) -> list[int]:
        """The file's identity when it was read, in the order `stat_identity` gives a file's now."""
        return [self.device, self.inode, self.size, self.mtime_ns, self.ctime_ns]

    @property
    def problems(self) -> list[LineProblem]:
        return self.transcript.problems

    @property
    def is_subagent(self) -> bool:
        return self.agent_id is not None

    @property
    def line_count(self) -> int:
        return self.line_marks.count

    def children(self) -> dict[str, list[Row]]:
        """parent uuid -> child rows in this file (built on first use, dropped on change)."""
        if self._children is None:
            self._children = self.transcript.children()
        return self._children

    def reset(self) -> None:
        self.read = ReadState()
        self.line_marks = LineMarks()
        self.transcript = Transcript(path=self.path)
        self.provisional = None
        self.torn = None
        self.notes = []
        self.long_tail = None
        self._children = None

    def rewritten(self, st: os.stat_result) -> bool:
        """Whether the bytes already read changed: another file, shrunk, the same size with a new
        modification time, or the head or the bytes before the read offset changed."""
        if st.st_ino != self.inode or st.st_dev != self.device or st.st_size < self.read.offset:
            return True
        if st.st_size == self.size and (st.st_mtime_ns, st.st_ctime_ns) != (self.mtime_ns, self.ctime_ns):
            return True
        if st.st_size == self.size and self.mtime_settled:
            return False  # same size and mtime, read long after its last change: as the database trusts it
        return fingerprint(self.path, self.read.offset) != self.print_

    def _as_read(self, st: os.stat_result) -> bool:
        """The file is as it was when last read although the read stopped short of its end: an unfinished last
        line too long to keep (`reader.MAX_TAIL`) is read again only once the file changes."""
        return self.long_tail is not None and self.long_tail == (st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def refresh(self, *, split: bool = False) -> str:
        """Read what was appended; re-read the whole file when it was replaced or rewritten. With `split`, a big
        file read from its first byte is read on two processes (`server.index.splitread`): for a command that reads
        one file, never in the language server (whose workers are the first index's)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return MISSING
        how = APPENDED
        if self.inode and self.rewritten(st):
            self.reset()
            how = RELOADED
        elif self.inode and (st.st_size == self.read.offset or self._as_read(st)):
            return UNCHANGED
        self.inode, self.device, self.mtime_ns, self.ctime_ns = st.st_ino, st.st_dev, st.st_mtime_ns, st.st_ctime_ns
        self._drop_provisional()
        result, printed = self._read_on(split)
        self.transcript.problems[:] = folded(self.transcript.problems, result.problems)
        self.notes = [n for n in self.notes if n.line < self.read.line]
        self.notes.extend(result.notes)
        self.transcript.add_rows(result.rows)
        self.provisional = result.provisional
        self.torn = self.transcript.torn_tail = result.unknown_tail
        self.read = result.state
        self.size = st.st_size
        with contextlib.suppress(OSError):
            after = os.stat(self.path)
            if after.st_size == self.read.offset and after.st_ino == st.st_ino:
                self.size, self.mtime_ns, self.ctime_ns = after.st_size, after.st_mtime_ns, after.st_ctime_ns
        self.mtime_settled = time.time_ns() - self.mtime_ns > RACY_NS
        self.long_tail = (st.st_size, st.st_mtime_ns, st.st_ctime_ns) if self.read.offset < st.st_size else None
        try:
            self.print_ = printed if printed is not None else fingerprint(self.path, self.read.offset)
        except OSError:  # gone already: the next update sees it missing
            self.print_ = 0
        self._children = None
        return how

    def _read_on(self, split: bool) -> tuple[ReadResult, int | None]:
        """What follows `self.read` in the file, and the fingerprint of the file up to where that read stopped, taken
        through the same descriptor (None when the read was split: then it is taken apart)."""
        if split and not self.read.offset and not self.read.tail:
            from server.index.splitread import read_from_start  # only for a command reading one file: forks

            return read_from_start(self.path, self.line_marks), None
        with open_regular(self.path) as fh:
            span = FileSpan(fh.fileno(), self.read.offset)
            result = read_transcript(self.path, self.read, self.line_marks, span=span)
            return result, fingerprint_open(fh, result.state.offset)

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
