"""Lenient line-by-line reading of a transcript: rows with byte spans, and problems by line.

Reading can start at any byte offset (for incremental updates): the caller passes the offset it
stopped at, the line number there and any unfinished tail it carried over. A line over
`linechunks.MAX_LINE_BYTES` is not read: it is a problem (`too_long_problem`), and every other line still loads.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, cast

import orjson

from storage.badlines import KEPT_PROBLEMS
from storage.fileopen import open_regular
from storage.jsonline import BOM, loads_line
from storage.linechunks import OVER_LIMIT, FileSpan, LongLine, WholeLines
from storage.linemarks import LineMarks
from storage.linkdecode import row_from_line
from storage.rows import CHAIN_TYPES, Row, row_from_entry

CHUNK = 8 * 1024 * 1024
MAX_TAIL = 1024 * 1024
"""An unfinished last line longer than this is not kept in the read state (which the index keeps in memory and in
its database): the next read starts at its first byte and reads it again from the file."""
UTF8_PIECE = 1024 * 1024
"""UTF-8 is checked this many bytes at a time (cut at a newline): faster than line by line or a whole chunk."""
NO_UUID = ""
"""The key of conversation rows written without a uuid: the CLI keys its message map by `uuid`, so
all of them share one key (`undefined`) and the last one wins, in the first one's place."""


@dataclass(slots=True)
class LineProblem:
    """A line that did not load: `line` 0-based, `offset` its first byte."""

    line: int
    offset: int
    length: int
    message: str
    torn: bool = False
    """True when this is the final line, unterminated: possibly a write still in progress."""
    too_long: bool = False
    """True when the line is over `linechunks.MAX_LINE_BYTES` and was not read (`length` is its size)."""
    more: int = 0
    """Not 0: this stands for that many bad lines of its kind past the first `KEPT_PROBLEMS`, not kept one by one,
    from `line` (the first of them) to `last`."""
    last: int = -1


def too_long_problem(line: int, long: LongLine, *, torn: bool = False) -> LineProblem:
    """The problem of a line over `MAX_LINE_BYTES`, not read (an unfinished one: `torn`, its size so far)."""
    size = f"{long.length:,} bytes{' so far, unfinished' if torn else ''}"
    message = f"line {line + 1} is too long to read: {size}, {OVER_LIMIT}"
    return LineProblem(line, long.offset, long.length, message, torn=torn, too_long=True)


FOLDED = "more bad lines like this, not kept one by one"
_JSON_SPACE = b" \t\r"


def folded(problems: list[LineProblem], more: list[LineProblem]) -> list[LineProblem]:
    """`problems` then `more` (read after them, later lines), with at most `KEPT_PROBLEMS` of each kind kept and the
    rest of that kind in one folded problem; neither list is changed."""
    out: list[LineProblem] = []
    kept = _Problems(out)
    for p in (*problems, *more):
        kept.add(p)
    return out


class _Problems:
    """Bad lines kept as a file keeps them, in the order read: the first `KEPT_PROBLEMS` of each kind whole, the rest
    of that kind counted in one folded problem (a problem folded already is counted in with its own count)."""

    __slots__ = ("out", "kept", "folds")

    def __init__(self, out: list[LineProblem]) -> None:
        self.out = out
        self.kept = [0, 0]
        self.folds: list[LineProblem | None] = [None, None]

    def full(self) -> bool:
        """No more lines that are not objects are kept whole: such a line is only counted."""
        return self.kept[0] >= KEPT_PROBLEMS

    def add(self, p: LineProblem) -> None:
        kind = int(p.too_long)
        if not p.more and self.kept[kind] < KEPT_PROBLEMS:
            self.out.append(p)
            self.kept[kind] += 1
        elif p.more:
            self._fold(p.line, p.offset, p.too_long, p.more, p.last)
        else:
            self.count(p.line, p.offset, too_long=p.too_long)

    def count(self, line: int, offset: int, *, too_long: bool = False) -> None:
        """One more bad line past those kept (the reader's hot path for a file of garbage: no call more)."""
        fold = self.folds[too_long] or self._new_fold(line, offset, too_long)
        fold.more += 1
        fold.last = line

    def _fold(self, line: int, offset: int, too_long: bool, more: int, last: int) -> None:
        fold = self.folds[too_long] or self._new_fold(line, offset, too_long)
        fold.more += more
        fold.last = max(fold.last, last)

    def _new_fold(self, line: int, offset: int, too_long: bool) -> LineProblem:
        fold = self.folds[too_long] = LineProblem(line, offset, 0, FOLDED, too_long=too_long, last=line)
        self.out.append(fold)
        return fold


def _never_an_object(buf: bytes | bytearray, pos: int, nl: int) -> bool:
    """The line from `pos` to `nl` holds something besides JSON whitespace, and the first such byte is not `{`: no
    reader, strict or lenient, makes an object of it."""
    at = pos
    while at < nl and buf[at] in _JSON_SPACE:
        at += 1
    if at == nl or buf[at] == 0x7B:
        return False
    return buf[at] not in b"\x0b\x0c" or not buf[at:nl].isspace()  # a line of only spaces is blank


@dataclass(slots=True)
class ReadState:
    """Where reading stopped: next byte, next 0-based line, and bytes of an unfinished line."""

    offset: int = 0
    line: int = 0
    tail: bytes = b""


@dataclass
class ReadResult:
    rows: list[Row] = field(default_factory=list)
    problems: list[LineProblem] = field(default_factory=list)
    state: ReadState = field(default_factory=ReadState)
    provisional: Row | None = None
    """An unterminated last line that parses: kept, but read again with the next update."""
    unknown_tail: LineProblem | None = None
    """An unterminated last line that does not parse (a torn write, or one still in progress)."""
    notes: list[LineProblem] = field(default_factory=list)
    """Lines read only leniently, as the CLI reads them (lone surrogates, invalid UTF-8)."""


def parse_line(
    raw: bytes | bytearray, line: int, offset: int, notes: list[LineProblem] | None = None
) -> Row | LineProblem | None:
    """One line without its newline: a Row, a problem, or None for a blank line. A line that only
    the CLI's lenient reading accepts is a Row, and `notes` (when given) gets why."""
    body = raw
    if line == 0 and body.startswith(BOM):
        body = body[3:]
        offset += 3
    if not body or body.isspace():  # blank, as `strip()` would tell, without a copy of the line
        return None
    try:
        entry, note = loads_line(body)
    except ValueError as exc:
        return LineProblem(line, offset, len(body), f"invalid JSON: {exc}")
    if not isinstance(entry, dict):
        return LineProblem(line, offset, len(body), f"not a JSON object but {type(entry).__name__}")
    if note is not None and notes is not None:
        notes.append(LineProblem(line, offset, len(body), note))
    return keyed(row_from_entry(entry, line, offset, len(body)))


_BLANKS = re.compile(b"\n+").match
"""The run of newlines at a position: as many blank lines."""


def _utf8(data: memoryview) -> bool:
    try:
        str(data, "utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _lines_utf8(buf: bytes | bytearray, view: memoryview) -> bool:
    """Whether the whole lines of `buf` (up to its last newline) are all valid UTF-8: then no line needs its own
    check. A newline never falls inside a multi-byte character, so pieces cut at one decode on their own."""
    end = buf.rfind(b"\n") + 1
    pos = 0
    while pos < end:
        cut = buf.find(b"\n", min(pos + UTF8_PIECE, end - 1)) + 1
        if not _utf8(view[pos:cut]):
            return False
        pos = cut
    return True


def keyed(row: Row) -> Row:
    """A conversation row without a uuid gets the shared key the CLI gives it (`NO_UUID`)."""
    if row.uuid is None and row.type in CHAIN_TYPES:
        row.uuid = NO_UUID
    return row


def read_transcript(
    path: Path,
    state: ReadState | None = None,
    marks: LineMarks | None = None,
    *,
    span: FileSpan | None = None,
) -> ReadResult:
    """Parse from `state` (default: the start) to the end of the file.

    `marks`, when given, gets the marks of the lines read (`storage.linemarks`): it ends where `state` starts, or
    holds nothing yet. `span`, when given, is
    read instead of opening `path`: the part of the file already open that starts at `state.offset` (and ends at
    a line's first byte, or at the end of the file).

    An unterminated last line stays in the returned state's tail so the next read sees it whole:
    if it parses it is also returned as `provisional` (the last of `rows`), else as `unknown_tail`.
    """
    state = state or ReadState()
    result = ReadResult()
    rows, problems = result.rows, _Problems(result.problems)
    loads, decode_error, make_row, fast_row = orjson.loads, orjson.JSONDecodeError, row_from_entry, row_from_line
    line_no = state.line
    start = state.offset - len(state.tail)
    marks = marks if marks is not None else LineMarks()
    mark, blank_run = marks.mark, marks.blank_run
    due_line, due_at = marks.resume(line_no, start)
    with open_regular(path) if span is None else contextlib.nullcontext(cast(BinaryIO, span)) as fh:
        fh.seek(state.offset)
        lines = WholeLines(fh, CHUNK, state.tail)
        for buf in lines.arrays():  # whole lines only: an unfinished one is in `lines.rest` at the end
            if isinstance(buf, LongLine):  # over MAX_LINE_BYTES: its bytes were never kept
                if line_no >= due_line or start >= due_at:
                    due_line, due_at = mark(line_no, start)
                problems.add(too_long_problem(line_no, buf))
                start += buf.length + 1
                line_no += 1
                continue
            view, find, pos = memoryview(buf), buf.find, 0
            all_utf8 = buf.isascii() or _lines_utf8(buf, view)  # else each fast row is checked: bad UTF-8 gets its hint
            while (nl := find(b"\n", pos)) >= 0:  # the hot loop: one parse and one Row per line, nothing else
                if nl == pos:  # blank lines, taken as a run: nothing to read in them
                    run = _BLANKS(buf, pos)
                    blanks = run.end() - pos if run is not None else 1
                    if line_no + blanks >= due_line or start + blanks >= due_at:
                        due_line, due_at = blank_run(line_no, start, blanks)
                    start, line_no, pos = start + blanks, line_no + blanks, pos + blanks
                    continue
                if line_no >= due_line or start >= due_at:
                    due_line, due_at = mark(line_no, start)
                entry = None
                if line_no and buf[pos] != 0x7B and problems.full() and _never_an_object(buf, pos, nl):  # counted
                    problems.count(line_no, start)
                    start += nl - pos + 1
                    line_no += 1
                    pos = nl + 1
                    continue
                if line_no:
                    row = fast_row(view[pos:nl], line_no, start)  # link fields only, no copy; None: in full
                    if row is not None and not all_utf8 and not _utf8(view[pos:nl]):
                        row = None
                    if row is not None:
                        if row.uuid is None:
                            keyed(row)
                        rows.append(row)
                        start += nl - pos + 1
                        line_no += 1
                        pos = nl + 1
                        continue
                raw = buf[pos:nl]
                if line_no:
                    try:
                        entry = loads(raw)
                    except decode_error:
                        pass
                if entry.__class__ is dict:
                    row = make_row(entry, line_no, start, len(raw))
                    if row.uuid is None:
                        keyed(row)
                    rows.append(row)
                else:
                    parsed = parse_line(raw, line_no, start, result.notes)
                    if isinstance(parsed, Row):
                        rows.append(parsed)
                    elif parsed is not None:
                        problems.add(parsed)
                start += len(raw) + 1
                line_no += 1
                pos = nl + 1
    marks.reached(line_no, start, torn=lines.long_rest is not None or bool(lines.rest))
    result.state = _read_tail(result, lines, ReadState(start, line_no, b""))
    return result


def _read_tail(result: ReadResult, lines: WholeLines, end: ReadState) -> ReadState:
    """Take the unfinished last line `lines` left after the whole lines that end at `end`; returns where the next
    read starts: after the line when it is kept (`MAX_TAIL`), else at its first byte."""
    if lines.long_rest is None and not lines.rest:
        return end
    if lines.long_rest is not None:
        result.unknown_tail = too_long_problem(end.line, lines.long_rest, torn=True)
        return end
    pending = lines.rest
    parsed = parse_line(pending, end.line, end.offset, result.notes)
    if isinstance(parsed, Row):
        result.rows.append(parsed)
        result.provisional = parsed
    elif isinstance(parsed, LineProblem):
        parsed.torn = True
        result.unknown_tail = parsed
    return ReadState(end.offset + len(pending), end.line, pending) if len(pending) <= MAX_TAIL else end


def read_entry(path: Path, row: Row) -> dict[str, Any]:
    """The full decoded body of one row, read from the file on demand; `{}` when the row's bytes
    changed since it was indexed (a rewrite the index has not caught up with yet)."""
    with open_regular(path) as fh:
        try:
            return read_entries_from(fh, [row])[0]
        except StaleRow:
            return {}


def read_entries_from(fh: BinaryIO, rows: list[Row]) -> list[dict[str, Any]]:
    """Bodies read as the CLI reads them. A span that no longer holds a JSON object (the file was
    rewritten since it was indexed) raises `StaleRow`."""
    out = []
    for row in rows:
        fh.seek(row.offset)
        raw = fh.read(row.length)
        try:
            entry = loads_line(raw)[0]
        except ValueError as exc:
            raise StaleRow(f"line {row.line + 1} changed since it was read: {exc}") from exc
        if not isinstance(entry, dict):
            raise StaleRow(f"line {row.line + 1} changed since it was read: not a JSON object")
        out.append(entry)
    return out


class StaleRow(ValueError):
    """A row's bytes no longer parse: the file changed under the index."""


def read_entries(path: Path, rows: list[Row]) -> list[dict[str, Any]]:
    """Bodies of several rows, in the order given, with one open file."""
    with open_regular(path) as fh:
        return read_entries_from(fh, rows)
