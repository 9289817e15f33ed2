"""Finding a session file's compact boundaries by a byte search, from any offset on.

A `--fork-session` copy of a compacted session starts at its source's last compact boundary (the CLI
copies the chain from there), so the boundary's uuid is what ties the copy to its source. Only lines
holding the marker are parsed; a scan returns where it stopped, so a file that grew is scanned from there.
"""

from __future__ import annotations

from pathlib import Path

from storage.fileopen import open_regular
from storage.jsonline import loads_line
from storage.linechunks import LongLine, WholeLines

MARKER = b'"compact_boundary"'
CHUNK = 16 * 1024 * 1024


def _uuid_of_boundary(line: bytes) -> str | None:
    try:
        entry = loads_line(line)[0]
    except ValueError:
        return None
    if not isinstance(entry, dict) or entry.get("type") != "system" or entry.get("subtype") != "compact_boundary":
        return None
    uuid = entry.get("uuid")
    return uuid if isinstance(uuid, str) else None


def boundaries_in(buf: bytes) -> list[str]:
    """The uuids of the compact boundary rows among the whole lines of `buf` (which ends with a newline)."""
    out: list[str] = []
    pos = 0
    while (at := buf.find(MARKER, pos)) >= 0:
        start = buf.rfind(b"\n", 0, at) + 1
        end = buf.find(b"\n", at)
        end = len(buf) if end < 0 else end
        uuid = _uuid_of_boundary(buf[start:end])
        if uuid is not None:
            out.append(uuid)
        pos = end + 1
    return out


def scan_boundaries(path: Path, start: int = 0) -> tuple[list[str], int]:
    """The compact boundaries' uuids in the whole lines of `path` from byte `start`, and the offset after
    the last whole line (an unfinished last line is left for the next scan). A line over
    `linechunks.MAX_LINE_BYTES` is passed over unread. Raises OSError."""
    found: list[str] = []
    offset = start
    with open_regular(path) as fh:
        fh.seek(start)
        for buf in WholeLines(fh, CHUNK, keep_rest=False):
            if isinstance(buf, LongLine):
                offset += buf.length + 1
                continue
            found.extend(boundaries_in(buf))
            offset += len(buf)
    return found, offset
