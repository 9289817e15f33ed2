"""Columns for diagnostics: the span of a key's value on the offending line, in UTF-16 units."""

from __future__ import annotations

from pathlib import Path

from server.index.diagnostics import Diagnostic
from storage.fileopen import open_regular
from storage.linemarks import LineMarks

MAX_LINE = 1 << 20


def utf16_len(data: bytes) -> int:
    return len(data.decode("utf-8", "replace").encode("utf-16-le")) // 2


def locate(path: Path, diags: list[Diagnostic], marks: LineMarks) -> None:
    """Fill `start_char`/`end_char`: the value of `key` when found on the line (its first `MAX_LINE` bytes), else
    the line."""
    todo = [d for d in diags if d.start_char is None and 0 <= d.line < marks.count]
    if not todo:
        return
    try:
        fh = open_regular(path)
    except OSError:
        return
    with fh:
        for d in todo:
            found = marks.line_bytes(fh, d.line, MAX_LINE)
            raw = b"" if found is None else found[1]  # None: the file changed since it was read
            d.start_char, d.end_char = 0, utf16_len(raw)
            if d.key:
                at = raw.find(b'"' + d.key.encode() + b'":')
                if at >= 0:
                    vstart = at + len(d.key) + 3
                    vend = _value_end(raw, vstart)
                    d.start_char = utf16_len(raw[:vstart])
                    d.end_char = d.start_char + utf16_len(raw[vstart:vend])


def _value_end(raw: bytes, i: int) -> int:
    if raw[i : i + 1] == b'"':
        j = i + 1
        while j < len(raw):
            c = raw[j]
            if c == 0x5C:
                j += 2
                continue
            if c == 0x22:
                return j + 1
            j += 1
        return len(raw)
    for j in range(i, len(raw)):
        if raw[j] in b",}]":
            return j
    return len(raw)
