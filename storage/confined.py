"""Reading below a projects folder without following a link swapped in after discovery.

Discovery (`storage.paths`, `server.index.store.ProjectIndex.discover`, the listing) decides which files under a
projects folder may be read: a symlink among them only if it resolves inside the folder. A file or a folder on the
way swapped for a link leading out after that decision would be followed by a plain open, and its contents shown.
So every projects folder read from is `confine`d first (by discovery, `storage.projectroots`), and
`open_inside` opens a path below one:

- the path's part below the folder is walked from the folder's real path (itself walked from `/` once and kept
  open while it is that folder) opening each folder, then the file, with `O_NOFOLLOW` (as
  `storage.access.open_decided` does): no link on the way, the common case;
- where a link is on the way it is decided again, as discovery did, at the open: resolved, it must stay inside
  the real folder, and the real path is opened by the same walk, so a link swapped in after that resolution is
  refused too (`LeadsOut`). A link inside the folder to a file inside it is followed, as the CLI does.

A hard link is a file of the folder in its own right: reading it shows bytes that were put in the folder (Linux's
`protected_hardlinks` lets one link only a file one owns or may read and write), so it is read; it is never
written (`storage.access`).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from storage.access import open_decided, open_decided_folder, open_in_folder, walk_folders
from storage.errors import NotATranscript, Unsafe
from storage.paths import is_inside
from storage.projectroots import absolute, confine, root_of

__all__ = ["LeadsOut", "NotARegularFile", "confine", "open_inside", "root_of"]


class NotARegularFile(OSError):
    """A FIFO, socket, device or folder where a transcript was expected; it is never read."""


class LeadsOut(NotARegularFile):
    """A file below a projects folder that leads out of it (a link swapped in after discovery): never read, as
    a file that is not regular is not."""


def open_inside(path: Path | str, flags: int, named: tuple[str, str], *, follow_last: bool = True) -> int:
    """A descriptor of `path`, below the confined folder `named` (`root_of`), opened with `flags` (reading) so
    that no link leads out of it (see the module docstring). `follow_last=False`: the file itself is never a
    link (a sidecar). `LeadsOut`, `NotARegularFile`, or the `OSError` of a file that is gone."""
    given, root = named
    text = absolute(path)
    try:
        return _open_below(root, text[len(given) :], flags, path)
    except Unsafe:
        pass  # a link on the way: decided again below
    try:
        if follow_last:
            real = os.path.realpath(text, strict=True)
        else:
            folder, name = os.path.split(text)
            real = os.path.join(os.path.realpath(folder, strict=True), name)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LeadsOut(errno.ELOOP, "a symlink loop; not read", str(path)) from None
        raise
    if not is_inside(Path(root), Path(real)):
        raise LeadsOut(errno.EACCES, f"leads out of the projects folder {root} (to {real}); not read", str(path))
    try:
        return _open(real, flags, path)
    except Unsafe:
        raise LeadsOut(errno.EACCES, "a link took the place of a folder or of the file; not read", str(path)) from None


HELD_ROOTS = 16
"""At most this many descriptors of projects folders are ever kept open (`_held_root`), a folder replaced and opened
again counting twice; the walk to others starts from `/`."""
_HELD: dict[str, tuple[int, int, int]] = {}
"""A real projects folder -> (its descriptor, opened from `/` following no link, its device and inode)."""
_KEPT: list[int] = []
"""Every descriptor `_held_root` kept (none is ever closed: another thread may be duplicating it)."""


def _held_root(root: str) -> int | None:
    """A new descriptor of the real projects folder `root` (a duplicate of the one kept open: a walk below it
    starts there, not from `/`), while `root` is still that folder; None when it cannot be kept. A folder since
    replaced is opened again; the descriptor of the old one is left open (another thread may be duplicating it)."""
    try:
        now = os.stat(root)
    except OSError:
        return None
    held = _HELD.get(root)
    if held is not None and (held[1], held[2]) == (now.st_dev, now.st_ino):
        return os.dup(held[0])
    if len(_KEPT) >= HELD_ROOTS:  # before, a folder replaced again and again left one more descriptor each time
        return None
    try:
        fd = open_decided_folder(root)
    except (OSError, Unsafe):
        return None
    st = os.fstat(fd)
    _KEPT.append(fd)
    _HELD[root] = (fd, st.st_dev, st.st_ino)  # no lock (one atomic assignment): forked workers come here too
    return os.dup(fd)


def _open_below(root: str, below: str, flags: int, path: Path | str) -> int:
    """`root` + `below` (`/` then names), walked from the kept descriptor of `root` as `open_decided` walks."""
    folder = _held_root(root)
    if folder is None:
        return _open(root + below, flags, path)
    *folders, name = below.split("/")[1:]
    try:
        return open_in_folder(walk_folders(folder, folders, path), name, flags, 0o600, path)
    except NotATranscript:
        raise NotARegularFile(errno.EINVAL, "not a regular file; not read", str(path)) from None


def _open(decided: str, flags: int, path: Path | str) -> int:
    try:
        return open_decided(decided, flags)
    except NotATranscript:
        raise NotARegularFile(errno.EINVAL, "not a regular file; not read", str(path)) from None
