"""Message counts kept between runs, so listing reads only what was appended since last time.

A count is stored per file with what identifies the bytes it counted: inode, size, modification
time, the byte offset counted to (always the end of a whole line) and a fingerprint of the file's
head and of the bytes just before that offset. A file that only grew on the same inode, with both
fingerprints unchanged, is counted from the offset; any other change (replaced, shrunk, rewritten
in place at any size) is counted again. The cache is a JSON file under
`$XDG_CACHE_HOME/session-lsp/` (else `~/.cache/session-lsp/`); `SESSION_LSP_NO_CACHE=1` turns it
off. A missing or damaged cache file is simply rebuilt: it only ever saves work.
"""

from __future__ import annotations

import os
import re
import zlib
from pathlib import Path
from typing import BinaryIO

from storage.cache import cache_dir, load_json_dict, save_json
from storage.fileopen import open_regular
from storage.linechunks import MAX_LINE_BYTES, LongLine, WholeLines

MARKERS = (b'"type":"user"', b'"type":"assistant"')
SPACED_MARKER = re.compile(rb'"type"(?:[ \t\r]+:[ \t\r]*|:[ \t\r]+)"(?:user|assistant)"')
"""The same markers written with whitespace around the colon (valid JSON from other writers)."""
SPACED_HINT = re.compile(rb'"type":?[ \t\r]')
"""Whitespace after `"type"` or its colon: only then is the slower `SPACED_MARKER` worth running (one regex
search costs a tenth of looking for each spelling in turn)."""
CHUNK = 16 * 1024 * 1024
PRINT = 4096
"""Bytes fingerprinted at the head of the file and before the counted offset."""


def cache_file() -> Path | None:
    folder = cache_dir()
    return None if folder is None else folder / "message-counts-v3.json"


def _markers(data: bytes) -> int:
    n = sum(data.count(m) for m in MARKERS)
    if SPACED_HINT.search(data):
        n += len(SPACED_MARKER.findall(data))
    return n


def fingerprint(path: Path, upto: int, data: bytes | None = None) -> int:
    """CRC-32 of the first `PRINT` bytes and of the `PRINT` bytes before `upto`."""
    if data is not None:
        head, seam = data[: min(PRINT, upto)], data[max(0, upto - PRINT) : upto]
        return zlib.crc32(seam, zlib.crc32(head))
    with open_regular(path) as fh:
        return fingerprint_open(fh, upto)


def fingerprint_open(fh: BinaryIO, upto: int) -> int:
    """`fingerprint` of the file open as `fh` (whose position it moves): of the bytes just read through it."""
    fh.seek(0)
    head = fh.read(min(PRINT, upto))
    fh.seek(max(0, upto - PRINT))
    seam = fh.read(upto - max(0, upto - PRINT))
    return zlib.crc32(seam, zlib.crc32(head))


def count_range(path: Path, start: int, data: bytes | None = None) -> tuple[int, int]:
    """Markers in the whole lines from byte `start`; returns (count, offset after the last newline).
    `data`, when given, is the whole file already read. A line over `MAX_LINE_BYTES` counts no row (it is
    not read, as `storage.reader` reads none of it)."""
    if data is not None:
        end = data.rfind(b"\n") + 1
        return (_markers(data[start:end]), end) if end > start else (0, start)
    total, offset = 0, start
    with open_regular(path) as fh:
        fh.seek(start)
        for buf in WholeLines(fh, CHUNK, keep_rest=False):
            if isinstance(buf, LongLine):
                offset += buf.length + 1
                continue
            total += _markers(buf)
            offset += len(buf)
    return total, offset


def _tail_markers(path: Path, upto: int, size: int) -> int:
    """The rows of the unfinished last line from byte `upto` (counted now, not in the cache); none when it is over
    `MAX_LINE_BYTES`, which is not read."""
    if upto >= size:
        return 0
    with open_regular(path) as fh:
        fh.seek(upto)
        rest = fh.read(MAX_LINE_BYTES + 1)
    return _markers(rest) if len(rest) <= MAX_LINE_BYTES else 0


class CountCache:
    """Load once, look up and update many, save once."""

    def __init__(self, where: Path | None = None) -> None:
        self.where = where if where is not None else cache_file()
        self.entries: dict[str, list[int]] = load_json_dict(self.where)
        self.dirty = False

    def _reusable(self, path: Path, st: os.stat_result, data: bytes | None) -> tuple[int, int]:
        """(count, offset) of what the cache holds for the file as it is now, else (0, 0)."""
        entry = self.entries.get(str(path))
        if not (isinstance(entry, list) and len(entry) == 6 and all(isinstance(v, int) for v in entry)):
            return 0, 0
        ino, counted, upto, size, changed_ns, print_ = entry
        if ino != st.st_ino or upto > st.st_size or size > st.st_size:
            return 0, 0
        if size == st.st_size and changed_ns != st.st_ctime_ns:
            return 0, 0  # rewritten in place at the same size (its change time moves even with the mtime put back)
        if fingerprint(path, upto, data) != print_:
            return 0, 0  # rewritten in place (and perhaps grown)
        return counted, upto

    def seed(self, path: Path, ino: int, counted: int, upto: int) -> None:
        """Take `counted` rows up to byte `upto` as known (from the index database, which checked
        the file grew by appends only); the next `count` reads from `upto` on."""
        self.entries[str(path)] = [ino, counted, upto, upto, 0, fingerprint(path, upto, None)]

    def counted(self, path: Path) -> tuple[int, int] | None:
        """(rows counted, bytes counted) of the cache's entry for `path`, if any."""
        entry = self.entries.get(str(path))
        if isinstance(entry, list) and len(entry) == 6:
            return entry[1], entry[2]
        return None

    def count(self, path: Path, st: os.stat_result, data: bytes | None = None) -> int:
        """User and assistant rows in `path`, plus an unterminated last line's."""
        counted, upto = self._reusable(path, st, data)
        entry = self.entries.get(str(path))
        if upto < st.st_size or not isinstance(entry, list) or entry[3:5] != [st.st_size, st.st_ctime_ns]:
            more, upto = count_range(path, upto, data)
            counted += more
            self.entries[str(path)] = [
                st.st_ino,
                counted,
                upto,
                st.st_size,
                st.st_ctime_ns,
                fingerprint(path, upto, data),
            ]
            self.dirty = True
        return counted + _tail_markers(path, upto, st.st_size)

    def save(self) -> None:
        if self.where is None or not self.dirty:
            return
        if save_json(self.where, self.entries):
            self.dirty = False
