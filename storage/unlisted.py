"""Session files a listing found but could not read (no permission, not a regular file): each said once on
stderr, as `session-lsp: PATH not listed (WHY)`, and counted, so that an output made without them is never kept
as the folder's listing. A file gone before it was read is no loss and is not said.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from storage.terminaltext import one_line

_SAID: set[str] = set()
_count = 0


def unlisted(path: Path, exc: OSError) -> None:
    """`path` was left out of a listing because reading it raised `exc`."""
    global _count
    if isinstance(exc, FileNotFoundError):
        return
    _count += 1
    if str(path) not in _SAID:
        _SAID.add(str(path))
        why = exc.strerror or str(exc) or type(exc).__name__
        print(f"session-lsp: {one_line(os.fsdecode(path))} not listed ({one_line(why)})", file=sys.stderr)


def unlisted_count() -> int:
    """How many times a file was left out so far in this process."""
    return _count
