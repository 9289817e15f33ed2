"""The cache folder (`$XDG_CACHE_HOME/session-lsp`, else `~/.cache/session-lsp`) and how files are
made in it: the folder 0700 and every file 0600 whatever the umask (caches hold titles, prompts and
paths), folders made on the way 0700 too. `SESSION_LSP_NO_CACHE=1` turns every cache off."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any

import orjson

from storage.locking import make_private_dirs


def cache_dir() -> Path | None:
    """The cache folder; None when caching is off."""
    if os.environ.get("SESSION_LSP_NO_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "session-lsp"


def private_dir(path: Path) -> None:
    """`mkdir -p path`, every folder it makes 0700, and the folder itself 0700."""
    make_private_dirs(path)
    os.chmod(path, 0o700)


def private_file(path: Path) -> None:
    """Create `path` if missing; either way 0600."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


def load_json_dict(path: Path | None) -> dict[str, Any]:
    """A cache file's JSON object; {} when caching is off or the file is missing or damaged."""
    if path is not None:
        with contextlib.suppress(OSError, orjson.JSONDecodeError):
            loaded = orjson.loads(path.read_bytes())
            if isinstance(loaded, dict):
                return loaded
    return {}


def save_json(path: Path, value: Any) -> bool:
    """Write `value` to `path` whole (aside, then renamed over it), 0600 in a 0700 folder; False when
    the folder cannot be written (a cache is only a cache)."""
    with contextlib.suppress(OSError):
        private_dir(path.parent)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")  # mkstemp makes it 0600
        with os.fdopen(fd, "wb") as fh:
            fh.write(orjson.dumps(value))
        os.replace(tmp, path)
        return True
    return False
