"""A big transcript read from its start on two processes: the lines of its second half on a forked child, those
of the first here, then joined into the one `ReadResult` a single read gives.

For a command that reads one session the file is the whole work (`chain` of a 150 MB transcript: the read is
0.35 s of 0.6 s), and the second core sits idle. Both halves read the one descriptor opened here (the worker
inherits it and reads with `pread`, `linechunks.FileSpan`), so they read the same file whatever is renamed or
linked meanwhile. The child starts its lines at number 1 (never the first line's BOM rule) and gives back rows,
problems and line marks packed with msgpack; their line numbers are moved by the first half's count here. When
the child fails (killed, out of memory), its half is read here.
"""

from __future__ import annotations

import logging
import os
from functools import partial
from pathlib import Path

import msgspec

from server.index.forked import Child, ChildFailed, in_worker
from storage.fileopen import open_regular
from storage.linechunks import FileSpan, LongLine
from storage.linemarks import LineMarks
from storage.reader import LineProblem, ReadResult, ReadState, folded, read_transcript, too_long_problem
from storage.rows import Row

log = logging.getLogger(__name__)

SPLIT_BYTES = 48 * 1024 * 1024
"""Files at least this large are read in two halves (a fork and its answer cost about 10 ms: below this, little
is won)."""
FIND_NEWLINE = 8 * 1024 * 1024
"""How far past the middle a newline is looked for; a line longer than that there: the file is read whole here."""


class _Half(msgspec.Struct, array_like=True, gc=False):
    """What the child read of the second half, lines numbered from 1."""

    rows: list[Row]
    problems: list[LineProblem]
    notes: list[LineProblem]
    provisional: bool
    unknown_tail: LineProblem | None
    offset: int
    line: int
    tail: bytes
    line_marks: bytes


_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(_Half).decode


def read_from_start(path: Path, marks: LineMarks | None = None) -> ReadResult:
    """`read_transcript(path, None, marks)`, on two processes when the file is big enough."""
    with open_regular(path) as fh:
        fd = fh.fileno()
        middle = None if in_worker() else _middle(fd, os.fstat(fd).st_size)
        if middle is None:
            return read_transcript(path, None, marks, span=FileSpan(fd, 0))
        with Child(partial(_read_half, path, fd, middle)) as child:
            first = read_transcript(path, None, marks, span=FileSpan(fd, 0, middle))
            if first.state.offset != middle or first.state.tail:
                # the file no longer reaches its middle with a whole line (shrunk or rewritten since it was
                # measured): the child's half does not follow this one, so it is read here whole, as one read does
                if marks is not None:
                    marks.clear()
                return read_transcript(path, None, marks, span=FileSpan(fd, 0))
            try:
                second = _decode(child.result())
            except (ChildFailed, msgspec.DecodeError):
                log.warning("reading the second half of %s on a forked child failed; read here", path, exc_info=True)
                second = _half(path, fd, middle)
    return _joined(first, second, marks)


def _middle(fd: int, size: int) -> int | None:
    """The first byte of the first line that starts past the middle of a file of `size` bytes; None when the file
    is too small to split or no line starts within `FIND_NEWLINE` bytes of the middle."""
    if size < SPLIT_BYTES:
        return None
    at = size // 2
    data = os.pread(fd, FIND_NEWLINE, at)
    nl = data.find(b"\n")
    if nl < 0 or at + nl + 1 >= size:
        return None
    return at + nl + 1


def _half(path: Path, fd: int, middle: int) -> _Half:
    marks = LineMarks()
    r = read_transcript(path, ReadState(middle, 1), marks, span=FileSpan(fd, middle))
    return _Half(
        r.rows,
        r.problems,
        r.notes,
        r.provisional is not None,
        r.unknown_tail,
        r.state.offset,
        r.state.line,
        r.state.tail,
        marks.to_bytes(),
    )


def _read_half(path: Path, fd: int, middle: int) -> bytes:
    """On the child: the second half, packed."""
    return _encode(_half(path, fd, middle))


def _joined(first: ReadResult, second: _Half, marks: LineMarks | None) -> ReadResult:
    """The second half's lines after the first's: renumbered, appended."""
    base = first.state.line - 1
    for row in second.rows:
        row.line += base
        row.order += base  # the file order a row is read with: its line
    for problem in (*second.problems, *second.notes, *([second.unknown_tail] if second.unknown_tail else [])):
        problem.line += base
        if problem.more:  # a fold of many: its last line too
            problem.last += base
        elif problem.too_long:  # its message names its line: named again by its place in the file
            problem.message = too_long_problem(
                problem.line, LongLine(problem.offset, problem.length), torn=problem.torn
            ).message
    if marks is not None:
        marks.joined(LineMarks.from_bytes(second.line_marks), base)
    first.rows.extend(second.rows)
    first.problems = folded(first.problems, second.problems)
    first.notes.extend(second.notes)
    first.provisional = second.rows[-1] if second.provisional else None
    first.unknown_tail = second.unknown_tail
    first.state = ReadState(second.offset, second.line + base, second.tail)
    return first
