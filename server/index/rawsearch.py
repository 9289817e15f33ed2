"""Find a uuid in files that are not indexed, by a byte search confirmed by parsing the line.

Files are read in pieces of whole lines (`storage.linechunks`): a line over `MAX_LINE_BYTES` is passed over unread,
as every reader passes it (a mapped file's line was copied whole to be parsed, and its head to count the lines).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import orjson

from storage.fileopen import open_regular
from storage.linechunks import LongLine, WholeLines

CHUNK = 8 * 1024 * 1024


def find_row(paths: Iterable[Path], uuid: str) -> list[tuple[Path, int]]:
    """(file, 0-based line) of rows whose own `uuid` is `uuid`."""
    needle = f'"uuid":"{uuid}"'.encode()
    out = []
    for path in paths:
        try:
            line = _line_of(path, needle, uuid)
        except OSError:
            continue
        if line is not None:
            out.append((path, line))
    return out


def _line_of(path: Path, needle: bytes, uuid: str) -> int | None:
    """The 0-based line of the first row of `path` whose own uuid is `uuid` (`needle` is how it is written)."""
    line = 0
    with open_regular(path) as fh:
        lines = WholeLines(fh, CHUNK)
        for piece in lines:
            if isinstance(piece, LongLine):
                line += 1
                continue
            found = _in_piece(piece, needle, uuid)
            if found is not None:
                return line + found
            line += piece.count(b"\n")
        found = _in_piece(lines.rest, needle, uuid)
    return None if found is None else line + found


def _in_piece(buf: bytes, needle: bytes, uuid: str) -> int | None:
    """The line, counted from `buf`'s first, of the first row among the lines of `buf` whose own uuid is `uuid`."""
    at = buf.find(needle)
    while at >= 0:
        start = buf.rfind(b"\n", 0, at) + 1
        end = buf.find(b"\n", at)
        try:
            entry = orjson.loads(buf[start : end if end >= 0 else len(buf)])
        except orjson.JSONDecodeError:
            entry = None
        if isinstance(entry, dict) and entry.get("uuid") == uuid:
            return buf.count(b"\n", 0, start)
        at = buf.find(needle, at + 1)
    return None
