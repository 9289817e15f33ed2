"""The cache folder (`$XDG_CACHE_HOME/session-lsp` when that is absolute, else `~/.cache/session-lsp`) and how files are
made in it: the folder 0700 and every file 0600 whatever the umask (caches hold titles, prompts and
paths), folders made on the way 0700 too. `SESSION_LSP_NO_CACHE=1` turns every cache off.

A cache folder that someone else could have planted or filled is never used, so we neither read a
hostile cache nor write ours where others can read it nor change modes through a link: it must be a
folder (not a symlink) of our own that no one else may write, in a folder that is ours or root's and
not writable by everyone (unless sticky). Otherwise caching is off for the run, said once on stderr.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

from storage.locking import make_private_dirs


def cache_dir() -> Path | None:
    """The cache folder; None when caching is off."""
    if os.environ.get("SESSION_LSP_NO_CACHE"):
        return None
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")  # a relative one is invalid
    folder = Path(base) / "session-lsp"
    why = untrusted(folder)
    if why is None:
        return folder
    if str(folder) not in _WARNED:
        _WARNED.add(str(folder))
        print(f"session-lsp: cache folder {folder} not used ({why}); caching is off", file=sys.stderr)
    return None


_WARNED: set[str] = set()


def untrusted(folder: Path) -> str | None:
    """Why `folder` may not serve as the cache folder, or None when it may (or does not exist yet)."""
    me = os.geteuid()
    try:
        parent = os.stat(folder.parent)
    except OSError:
        parent = None
    if parent is not None and (
        parent.st_uid not in (me, 0) or (parent.st_mode & stat.S_IWOTH and not parent.st_mode & stat.S_ISVTX)
    ):
        return f"{folder.parent} belongs to uid {parent.st_uid} or anyone may write it"
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc.strerror or str(exc)
    if stat.S_ISLNK(st.st_mode):
        return "it is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a folder"
    if st.st_uid != me:
        return f"it belongs to uid {st.st_uid}"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"others may write it (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def private_dir(path: Path) -> None:
    """`mkdir -p path`, every folder it makes 0700, and the folder itself 0700 (never through a link)."""
    make_private_dirs(path)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fchmod(fd, 0o700)
    finally:
        os.close(fd)


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
    return save_bytes(path, orjson.dumps(value))


def save_bytes(path: Path, data: bytes) -> bool:
    """Write `data` to `path` as `save_json` does."""
    tmp = None
    try:
        private_dir(path.parent)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")  # mkstemp makes it 0600
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
        return True
    except OSError:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return False
