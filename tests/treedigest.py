"""What every file under a folder holds, to show that nothing there changed."""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path


def digest_tree(root: Path, *, modes: bool = False) -> dict[str, str]:
    """Every regular file under `root` (symlinks not followed) with a hash of its bytes, and its mode with `modes`."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.is_symlink():
            digest = hashlib.sha256(p.read_bytes()).hexdigest()
            out[str(p.relative_to(root))] = f"{digest} {stat.S_IMODE(p.stat().st_mode):o}" if modes else digest
    return out
