"""Where a transcript's lines start, kept sparse: a mark (line number, byte offset) every `EVERY_LINES` lines or
`EVERY_BYTES` bytes, whichever comes first, and the number of lines.

A line's start is its nearest mark at or before it, then a read forward from there counting newlines: a bounded
read, past fewer than twice `EVERY_LINES` lines and `EVERY_BYTES` bytes (a line that starts further on is marked,
but for those of a short run of blank lines), in reads of at most `PIECE` bytes. Between two marks as many bytes
apart as lines apart every line is a lone newline: a line's start there is a sum, nothing is read. A long run of
blank lines is marked at its first line and past its last, so any number of blank lines costs two marks, and garbage
of short lines a mark every `EVERY_LINES` of them (a file of 200 MiB of newlines took 8 bytes a line, 1.68 GB, when
every line's start was kept)."""

from __future__ import annotations

from array import array
from bisect import bisect_right
from typing import BinaryIO

EVERY_LINES = 256
EVERY_BYTES = 16 * 1024
"""On transcripts (lines of a few KB) a mark every few lines: a line is found reading some KB more than the line, and
the marks take a fifth of the memory one offset a line did."""
FIRST_PIECE = 4 * 1024
PIECE = 64 * 1024
"""A read forward from a mark reads `FIRST_PIECE` bytes first, then twice as much each time up to this."""
_HEAD = 3
"""Numbers before the marks in `to_bytes`: lines, end, torn."""


class LineMarks:
    """The start of every line read, from the marks a reader leaves (`mark`, `blank_run`, `reached`).

    `lines` whole lines (each ended by a newline) were read, the last ending just before byte `end`; when `torn`, an
    unfinished line follows at `end` and counts as a line too. Lines are numbered from 0 at the file's first byte;
    a reader that starts further in (at a line number and its offset) leaves marks from there on."""

    __slots__ = ("_lines", "_offsets", "lines", "end", "torn")

    def __init__(self) -> None:
        self._lines: array[int] = array("Q")
        self._offsets: array[int] = array("Q")
        self.lines = 0
        self.end = 0
        self.torn = False

    @property
    def count(self) -> int:
        """The number of lines, an unfinished last one included."""
        return self.lines + self.torn

    @property
    def marks(self) -> int:
        """How many marks are kept."""
        return len(self._lines)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LineMarks):
            return NotImplemented
        return self.to_bytes() == other.to_bytes()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LineMarks(lines={self.lines}, end={self.end}, torn={self.torn}, marks={self.marks})"

    def __sizeof__(self) -> int:
        return object.__sizeof__(self) + self._lines.__sizeof__() + self._offsets.__sizeof__()

    # ---- what a reader leaves -----------------------------------------------------------------------------------
    def due(self) -> tuple[int, int]:
        """(line, offset): the first line at or past either is marked (`mark`)."""
        if not self._lines:
            return 0, 0
        return self._lines[-1] + EVERY_LINES, self._offsets[-1] + EVERY_BYTES

    def mark(self, line: int, offset: int) -> tuple[int, int]:
        """Line `line` starts at `offset`; returns when the next mark is due (as `due`)."""
        if not self._lines or self._lines[-1] != line:
            self._lines.append(line)
            self._offsets.append(offset)
        return line + EVERY_LINES, offset + EVERY_BYTES

    def blank_run(self, line: int, offset: int, blanks: int) -> tuple[int, int]:
        """`blanks` blank lines from line `line` at `offset`, reaching when a mark is due (as `mark`). A run of
        `EVERY_LINES` or more is marked at its first line and past its last, so none in it is ever read to be found; a
        shorter one like one line: at its first, when that one is due."""
        if blanks >= EVERY_LINES:
            self.mark(line, offset)
            return self.mark(line + blanks, offset + blanks)
        due_line, due_at = self.due()
        return self.mark(line, offset) if line >= due_line or offset >= due_at else (due_line, due_at)

    def reached(self, line: int, offset: int, *, torn: bool) -> None:
        """A read stopped at line `line`, byte `offset` (past its last whole line), with an unfinished line there or
        not."""
        self.lines, self.end, self.torn = line, offset, torn

    def resume(self, line: int, offset: int) -> tuple[int, int]:
        """A read goes on from line `line` at `offset`: where the last one stopped, its unfinished line read again
        (and any mark a read cut short left past it dropped); returns when the next mark is due."""
        keep = bisect_right(self._lines, self.lines)
        del self._lines[keep:], self._offsets[keep:]
        if self._lines and (line, offset) != (self.lines, self.end):
            raise ValueError(f"marks end at line {self.lines}, byte {self.end}: not at line {line}, byte {offset}")
        self.lines, self.end, self.torn = line, offset, False
        return self.due()

    def clear(self) -> None:
        """No lines read."""
        del self._lines[:], self._offsets[:]
        self.lines, self.end, self.torn = 0, 0, False

    def joined(self, after: LineMarks, shift: int) -> None:
        """Append the marks of the lines read after these (`after`, its lines numbered `shift` less than here)."""
        for line, offset in zip(after._lines, after._offsets):
            self.mark(line + shift, offset)
        self.reached(after.lines + shift, after.end, torn=after.torn)

    def copy(self) -> LineMarks:
        """These marks as they are now: a reader may go on with these (`resume`) while the copy is looked in."""
        out = LineMarks()
        out._lines, out._offsets = self._lines[:], self._offsets[:]
        out.lines, out.end, out.torn = self.lines, self.end, self.torn
        return out

    # ---- stored --------------------------------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """`lines`, `end`, `torn`, then each mark's line and offset (8 bytes each, native order)."""
        pairs = array("Q", [self.lines, self.end, int(self.torn)]) * (1 + len(self._lines))
        del pairs[_HEAD + 2 * len(self._lines) :]
        pairs[_HEAD::2] = self._lines
        pairs[_HEAD + 1 :: 2] = self._offsets
        return pairs.tobytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> LineMarks:
        """Marks as `to_bytes` gave them; ValueError when they cannot be (damaged)."""
        pairs = array("Q")
        pairs.frombytes(data)
        if len(pairs) < _HEAD or len(pairs) % 2 != 1 or pairs[2] > 1:
            raise ValueError("not line marks")
        out = cls()
        out.lines, out.end, out.torn = pairs[0], pairs[1], bool(pairs[2])
        out._lines = pairs[_HEAD::2]
        out._offsets = pairs[_HEAD + 1 :: 2]
        return out

    # ---- finding a line ------------------------------------------------------------------------------------------
    def start(self, fh: BinaryIO, line: int) -> int | None:
        """The first byte of line `line` of the file open as `fh`; None when the file no longer has that line where
        it was read (changed since). IndexError for a line not read."""
        found = self._find(fh, line, 0)
        return None if found is None else found[0]

    def line_bytes(self, fh: BinaryIO, line: int, limit: int) -> tuple[int, bytes] | None:
        """(first byte, the line's first `limit` bytes, its newline left out) of line `line`; None as `start`."""
        return self._find(fh, line, limit)

    def _find(self, fh: BinaryIO, line: int, limit: int) -> tuple[int, bytes] | None:
        if not 0 <= line < self.count:
            raise IndexError(f"line {line} of {self.count}")
        at = bisect_right(self._lines, line) - 1
        if line == self.lines:  # the unfinished last line, or a mark past the last whole one
            return self.end, _line_from(fh, self.end, b"", limit)
        if at < 0:
            raise IndexError(f"line {line} was not read here: no mark at or before it")
        mark_line, offset = self._lines[at], self._offsets[at]
        next_line, next_offset = (
            (self._lines[at + 1], self._offsets[at + 1]) if at + 1 < len(self._lines) else (self.lines, self.end)
        )
        if line == mark_line or next_offset - offset == next_line - mark_line:  # marked, or among lone newlines
            start = offset + line - mark_line
            return start, _line_from(fh, start, b"", limit)
        return _counted(fh, offset, line - mark_line, limit, next_offset)


def _counted(fh: BinaryIO, offset: int, skip: int, limit: int, before: int) -> tuple[int, bytes] | None:
    """From byte `offset`, past `skip` newlines: (that byte's offset, the line there as `_line_from`); None when
    they are not all before byte `before` (where the next mark's line starts: the file changed since it was read,
    and is read no further than it was)."""
    fh.seek(offset)
    size = FIRST_PIECE
    while True:
        data = fh.read(max(0, min(size, before - offset)))
        if not data:
            return None
        newlines = data.count(b"\n")
        if newlines >= skip:
            break
        skip -= newlines
        offset += len(data)
        size = min(2 * size, PIECE)
    at = 0
    for _ in range(skip):
        at = data.index(b"\n", at) + 1
    return offset + at, _line_from(fh, offset + at, data[at:], limit)


def _line_from(fh: BinaryIO, start: int, have: bytes, limit: int) -> bytes:
    """The first `limit` bytes of the line at `start` (its newline left out), given its first bytes `have` (read
    already, followed in the file by what `fh` reads next); read on as `_counted` reads."""
    if not limit:
        return b""
    cut = have.find(b"\n", 0, limit)
    if cut >= 0:
        return have[:cut]
    if len(have) >= limit:
        return have[:limit]
    if not have:
        fh.seek(start)
    got = [have]
    size, piece = len(have), FIRST_PIECE
    while size < limit:
        data = fh.read(min(limit - size, piece))
        if not data:
            break
        cut = data.find(b"\n")
        if cut >= 0:
            got.append(data[:cut])
            break
        got.append(data)
        size += len(data)
        piece = min(2 * piece, PIECE)
    return b"".join(got)[:limit]
