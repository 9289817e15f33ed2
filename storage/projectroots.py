"""The projects folders this process reads from: each as given and as its real path.

Discovery `confine`s every projects folder it lists (`storage.paths`, the index); a read of a path below one goes
through `storage.confined.open_inside`, which follows no link leading out of it. Kept for the process's life (a
forked worker inherits them); registering is idempotent and cheap.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

_ROOTS: dict[str, str] = {}
"""A projects folder as it was given, and as its real path, -> its real path (absolute, as strings)."""
_LOCK = threading.Lock()


def confine(projects_dir: Path | str) -> Path:
    """Read files below `projects_dir` only through `storage.confined.open_inside` from now on; its real path."""
    given = os.path.abspath(os.path.expanduser(os.fspath(projects_dir)))
    known = _ROOTS.get(given)
    if known is not None:
        return Path(known)
    real = os.path.realpath(given)
    with _LOCK:
        _ROOTS[given] = real
        _ROOTS[real] = real
    return Path(real)


def root_of(path: Path | str) -> tuple[str, str] | None:
    """(the confined folder as `path` names it, its real path) for a path below a confined projects folder."""
    if not _ROOTS:
        return None
    folder = os.path.abspath(path)
    while True:
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        real = _ROOTS.get(parent)
        if real is not None:
            return parent, real
        folder = parent
