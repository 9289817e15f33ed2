"""Lenient line-by-line reading of a transcript: rows with byte spans, and problems by line.

Reading can start at any byte offset (for incremental updates): the caller passes the offset it
stopped at, the line number there and any unfinished tail it carried over.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, MutableSequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from storage.linkdecode import row_from_line
from storage.rows import Row, row_from_entry

BOM = b"\xef\xbb\xbf"
CHUNK = 8 * 1024 * 1024


@dataclass(slots=True)
class LineProblem:
    """A line that did not load: `line` 0-based, `offset` its first byte."""

    line: int
    offset: int
    length: int
    message: str
    torn: bool = False
    """True when this is the final line, unterminated: possibly a write still in progress."""


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


def parse_line(raw: bytes, line: int, offset: int) -> Row | LineProblem | None:
    """One line without its newline: a Row, a problem, or None for a blank line."""
    body = raw
    if line == 0 and body.startswith(BOM):
        body = body[3:]
        offset += 3
    if not body.strip():
        return None
    try:
        entry = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        try:
            entry = loads_as_cli(body)
        except orjson.JSONDecodeError:
            return LineProblem(line, offset, len(body), f"invalid JSON: {exc}")
    if not isinstance(entry, dict):
        return LineProblem(line, offset, len(body), f"not a JSON object but {type(entry).__name__}")
    return row_from_entry(entry, line, offset, len(body))


def iter_lines(path: Path, state: ReadState) -> Iterator[tuple[bytes, int, int, bool]]:
    """(line bytes, 0-based line, byte offset, terminated) from `state` to the end of the file."""
    line_no = state.line
    with open(path, "rb") as fh:
        fh.seek(state.offset)
        pending = state.tail
        start = state.offset - len(pending)
        while True:
            chunk = fh.read(CHUNK)
            if not chunk:
                break
            buf = pending + chunk if pending else chunk
            pos = 0
            while True:
                nl = buf.find(b"\n", pos)
                if nl < 0:
                    break
                yield buf[pos:nl], line_no, start + pos, True
                line_no += 1
                pos = nl + 1
            start += pos
            pending = buf[pos:]
        if pending:
            yield pending, line_no, start, False


def read_transcript(
    path: Path, state: ReadState | None = None, line_offsets: MutableSequence[int] | None = None
) -> ReadResult:
    """Parse from `state` (default: the start) to the end of the file.

    `line_offsets`, when given, gets the start offset of every line read appended to it.

    An unterminated last line stays in the returned state's tail so the next read sees it whole:
    if it parses it is also returned as `provisional` (the last of `rows`), else as `unknown_tail`.
    """
    state = state or ReadState()
    result = ReadResult()
    rows, problems = result.rows, result.problems
    loads, decode_error, make_row, fast_row = orjson.loads, orjson.JSONDecodeError, row_from_entry, row_from_line
    offsets_append = line_offsets.append if line_offsets is not None else None
    line_no = state.line
    with open(path, "rb") as fh:
        fh.seek(state.offset)
        pending = state.tail
        start = state.offset - len(pending)
        while chunk := fh.read(CHUNK):
            buf = pending + chunk if pending else chunk
            view, find, pos = memoryview(buf), buf.find, 0
            while (nl := find(b"\n", pos)) >= 0:  # the hot loop: one parse and one Row per line, nothing else
                if offsets_append is not None:
                    offsets_append(start)
                entry = None
                if line_no:
                    row = fast_row(view[pos:nl], line_no, start)  # link fields only, no copy; None: in full
                    if row is not None:
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
                    rows.append(make_row(entry, line_no, start, len(raw)))
                else:
                    parsed = parse_line(raw, line_no, start)
                    if isinstance(parsed, Row):
                        rows.append(parsed)
                    elif parsed is not None:
                        problems.append(parsed)
                start += len(raw) + 1
                line_no += 1
                pos = nl + 1
            pending = buf[pos:]
    end = ReadState(start, line_no, b"")
    if pending:
        if offsets_append is not None:
            offsets_append(start)
        end = ReadState(start + len(pending), line_no, pending)
        parsed = parse_line(pending, line_no, start)
        if isinstance(parsed, Row):
            rows.append(parsed)
            result.provisional = parsed
        elif isinstance(parsed, LineProblem):
            parsed.torn = True
            result.unknown_tail = parsed
    result.state = end
    return result


def read_entry(path: Path, row: Row) -> dict:
    """The full decoded body of one row, read from the file on demand."""
    with open(path, "rb") as fh:
        return read_entries_from(fh, [row])[0]


def read_entries_from(fh, rows: list[Row]) -> list[dict]:  # type: ignore[no-untyped-def]
    out = []
    for row in rows:
        fh.seek(row.offset)
        out.append(loads_as_cli(fh.read(row.length)))
    return out


def loads_as_cli(raw: bytes) -> Any:
    """One line decoded as the CLI decodes it: bytes that are not UTF-8 become U+FFFD, and a number beyond
    a double is read (Infinity to JSON.parse) instead of failing; anything else invalid still raises."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        text = raw.decode("utf-8", "replace")
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            try:  # numbers beyond a double only: NaN literals and lone surrogates stay invalid, as in orjson
                value = json.loads(text, parse_constant=_no_constant)
                orjson.dumps(value)
                return value
            except (ValueError, orjson.JSONEncodeError) as exc:
                raise orjson.JSONDecodeError(str(exc), text, 0) from exc


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def read_entries(path: Path, rows: list[Row]) -> list[dict]:
    """Bodies of several rows, in the order given, with one open file."""
    with open(path, "rb") as fh:
        return read_entries_from(fh, rows)
