"""Reading below a projects folder without following a link swapped in after discovery.

Discovery (`storage.paths`, `server.index.store.ProjectIndex.discover`, the listing) decides which files under a
projects folder may be read: a symlink among them only if it resolves inside the folder. A file or a folder on the
way swapped for a link leading out after that decision would be followed by a plain open, and its contents shown.
So every projects folder read from is `confine`d first (by discovery, `storage.projectroots`), and
`open_inside` opens a path below one:

- the path's part below the folder is walked from the folder's real path (itself walked from `/`) opening each
  folder, then the file, with `O_NOFOLLOW` (`storage.access.open_decided`): no link on the way, the common case;
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

from storage.access import open_decided
from storage.errors import NotATranscript, Unsafe
from storage.paths import is_inside
from storage.projectroots import confine, root_of

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
    absolute = os.path.abspath(path)
    try:
        return _open(root + absolute[len(given) :], flags, path)
    except Unsafe:
        pass  # a link on the way: decided again below
    try:
        if follow_last:
            real = os.path.realpath(absolute, strict=True)
        else:
            folder, name = os.path.split(absolute)
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


def _open(decided: str, flags: int, path: Path | str) -> int:
    try:
        return open_decided(decided, flags)
    except NotATranscript:
        raise NotARegularFile(errno.EINVAL, "not a regular file; not read", str(path)) from None
