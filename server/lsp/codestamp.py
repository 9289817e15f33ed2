"""What a kept answer depends on besides its request: the code that computed it.

The installed distribution's metadata folders (their names carry the version) and the size and mtime of every
module of `server/` and `storage/` and of pygls and lsprotocol: an edited checkout or an upgrade gives another
stamp, so nothing kept by other code is replayed. (`importlib.metadata` is not asked: it alone takes longer
than answering from what was kept.)
"""

from __future__ import annotations

import os
import sys
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any

PACKAGE_ROOT = Path(__file__).resolve().parents[2]
OWN_PACKAGES = ("server", "storage")
DIST_PREFIX = "session_lsp-"


def _modules(folder: Path) -> list[list[Any]]:
    out: list[list[Any]] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                try:
                    st = os.stat(path)
                    out.append([path, st.st_size, st.st_mtime_ns])
                except OSError:
                    out.append([path])
    return out


def _distributions() -> list[str]:
    """The `session_lsp-VERSION.dist-info` folders on the import path."""
    found: list[str] = []
    for folder in sys.path:
        try:
            names = os.listdir(folder or ".")
        except OSError:
            continue
        found.extend(os.path.join(folder, n) for n in names if n.startswith(DIST_PREFIX) and n.endswith(".dist-info"))
    return sorted(found)


@cache
def code_stamp() -> list[Any]:
    """The stamp of the code running now (taken once per process)."""
    out: list[Any] = [_distributions()]
    for name in OWN_PACKAGES:
        out.extend(_modules(PACKAGE_ROOT / name))
    for name in ("pygls", "lsprotocol"):
        spec = find_spec(name)
        if spec is not None and spec.origin:
            out.extend(_modules(Path(spec.origin).parent))
    return out
