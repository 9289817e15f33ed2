"""Message counts kept between runs, so listing reads only what was appended since last time.

A count is stored per file with its inode and the byte offset counted to (always the end of a
whole line). A file that grew on the same inode is counted from there; one that shrank or was
replaced is counted again. The cache is a JSON file under `$XDG_CACHE_HOME/session-lsp/` (else
`~/.cache/session-lsp/`); `SESSION_LSP_NO_CACHE=1` turns it off. A missing or damaged cache file
is simply rebuilt: it only ever saves work.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

import orjson

MARKERS = (b'"type":"user"', b'"type":"assistant"')
CHUNK = 16 * 1024 * 1024


def cache_file() -> Path | None:
    if os.environ.get("SESSION_LSP_NO_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "session-lsp" / "message-counts-v1.json"


def _markers(data: bytes) -> int:
    return sum(data.count(m) for m in MARKERS)


def count_range(path: Path, start: int, data: bytes | None = None) -> tuple[int, int]:
    """Markers in the whole lines from byte `start`; returns (count, offset after the last newline).
    `data`, when given, is the whole file already read."""
    if data is not None:
        end = data.rfind(b"\n") + 1
        return (_markers(data[start:end]), end) if end > start else (0, start)
    total, offset, carry = 0, start, b""
    with open(path, "rb") as fh:
        fh.seek(start)
        while block := fh.read(CHUNK):
            buf = carry + block
            cut = buf.rfind(b"\n") + 1
            if cut:
                total += _markers(buf[:cut])
                offset += cut
                carry = buf[cut:]
            else:
                carry = buf
    return total, offset


class CountCache:
    """Load once, look up and update many, save once."""

    def __init__(self, where: Path | None = None) -> None:
        self.where = where if where is not None else cache_file()
        self.entries: dict[str, list[int]] = {}
        self.dirty = False
        if self.where is not None:
            with contextlib.suppress(OSError, orjson.JSONDecodeError, TypeError):
                loaded = orjson.loads(self.where.read_bytes())
                if isinstance(loaded, dict):
                    self.entries = loaded

    def count(self, path: Path, st: os.stat_result, data: bytes | None = None) -> int:
        """User and assistant rows in `path`, plus an unterminated last line's."""
        key = str(path)
        entry = self.entries.get(key)
        counted, upto = 0, 0
        if isinstance(entry, list) and len(entry) == 3 and entry[0] == st.st_ino and entry[2] <= st.st_size:
            counted, upto = entry[1], entry[2]
        if upto < st.st_size:
            more, upto = count_range(path, upto, data)
            counted += more
            self.entries[key] = [st.st_ino, counted, upto]
            self.dirty = True
        tail = 0
        if upto < st.st_size:  # an unfinished last line: count it now, not in the cache
            with open(path, "rb") as fh:
                fh.seek(upto)
                rest = fh.read()
            tail = _markers(rest)
        return counted + tail

    def save(self) -> None:
        if self.where is None or not self.dirty:
            return
        with contextlib.suppress(OSError):
            self.where.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.where.parent, prefix=".counts-")
            with os.fdopen(fd, "wb") as fh:
                fh.write(orjson.dumps(self.entries))
            os.replace(tmp, self.where)
            self.dirty = False
