"""Find a uuid in files that are not indexed, by a byte search confirmed by parsing the line."""

from __future__ import annotations

import mmap
from collections.abc import Iterable
from pathlib import Path

import orjson

from storage.fileopen import open_regular


def find_row(paths: Iterable[Path], uuid: str) -> list[tuple[Path, int]]:
    """(file, 0-based line) of rows whose own `uuid` is `uuid`."""
    needle = f'"uuid":"{uuid}"'.encode()
    out = []
    for path in paths:
        try:
            with open_regular(path) as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
                at = data.find(needle)
                while at >= 0:
                    start = data.rfind(b"\n", 0, at) + 1
                    end = data.find(b"\n", at)
                    line = data[start : end if end >= 0 else len(data)]
                    try:
                        entry = orjson.loads(line)
                    except orjson.JSONDecodeError:
                        entry = None
                    if isinstance(entry, dict) and entry.get("uuid") == uuid:
                        out.append((path, data[:start].count(b"\n")))
                        break
                    at = data.find(needle, at + 1)
        except (OSError, ValueError):  # empty files cannot be mapped
            continue
    return out
