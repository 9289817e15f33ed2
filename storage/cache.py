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
import errno
import os
import stat
import sys
from pathlib import Path
from typing import Any

import orjson

from storage.access import open_decided_folder
from storage.errors import SessionLspError, Unsafe
from storage.terminaltext import one_line
from storage.wholefile import put_whole


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
        shown = f"cache folder {one_line(folder)} not used ({one_line(why)})"
        print(f"session-lsp: {shown}; caching is off", file=sys.stderr)
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


def cache_folder_path(folder: Path) -> Path:
    """The real path `folder` is walked along: the links above the cache folder resolved (a linked home or
    `~/.cache`), none at or below it (every folder there is ours, 0700: a link there is one swapped in, and the walk
    of `open_private_folder` refuses it). For a folder not below the cache folder, the links above `folder`."""
    root = cache_dir()
    base = root if root is not None and (folder == root or root in folder.parents) else folder
    return Path(os.path.realpath(base.parent)) / base.name / folder.relative_to(base)


def open_private_folder(folder: Path) -> int:
    """A descriptor of `folder` (opened for reading: it can be listed, and files opened in it), walked from `/`
    following no link (`storage.access`) along `cache_folder_path`, every folder it makes 0700 and `folder` itself
    made 0700. A link where a folder should be is an `OSError` (ELOOP) and nothing is made below it."""
    try:
        walked = open_decided_folder(cache_folder_path(Path(os.path.abspath(folder))), made=[])
    except Unsafe as exc:
        raise OSError(errno.ELOOP, f"{exc}; not used", str(folder)) from None
    try:
        fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=walked)
    finally:
        os.close(walked)
    try:
        os.fchmod(fd, 0o700)
    except BaseException:
        os.close(fd)
        raise
    return fd


def private_dir(path: Path) -> None:
    """`mkdir -p path`, every folder it makes 0700, and the folder itself 0700 (never through a link: see
    `open_private_folder`)."""
    os.close(open_private_folder(path))


def private_file(path: Path) -> None:
    """Create `path` if missing; either way 0600. Created in its folder opened by `open_private_folder`, never
    through a link; a link, FIFO or hard link (a file elsewhere) there is an `OSError` and is left as it is."""
    folder = open_private_folder(path.parent)
    try:
        fd = os.open(path.name, os.O_RDWR | os.O_CREAT | _NO_LINK, 0o600, dir_fd=folder)
    finally:
        os.close(folder)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            raise OSError(errno.EPERM, "not a regular file of one name; not used", str(path))
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


_NO_LINK = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


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
    """Write `data` to `path` as `save_json` does: its folder opened by `open_private_folder`, the file put in
    place whole by descriptor (`storage.wholefile`), so a folder swapped for a link takes nothing out. False when
    it cannot be written (a cache is only a cache), or another process is writing it."""
    try:
        folder = open_private_folder(path.parent)
    except OSError:
        return False
    try:
        put_whole(folder, path.name, data, path, replace=True)
        return True
    except (OSError, SessionLspError):
        return False
    finally:
        os.close(folder)
