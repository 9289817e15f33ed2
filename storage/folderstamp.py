"""What a projects folder is now, in one digest: every entry below it, as `lstat` gives it.

An answer computed from the folder (a listing, every file's diagnostics) is the same for the same digest: every
file the readers open lies inside the folder (links leading out are never read, `storage.paths.stays_inside`),
and any change to an entry changes its size, its mtime or its inode, or the mtime of its folder. Each entry's
ctime is in the digest too: only the kernel sets it, so it shows what mtime does not (a rewrite whose mtime was
put back, a new owner or ACL that lets this user read the file no more). Links are not
followed: a link's own identity is in the digest, and a linked file inside the folder is walked where it lies.
A digest taken while some entry's mtime is within `RACY_NS` of now is marked unsettled: a
same-size rewrite in the same mtime tick could still follow, so nothing may be kept under it.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from pathlib import Path
from typing import NamedTuple

RACY_NS = 2_000_000_000
"""A file modified this recently may change again within its mtime's granularity: never take it as unchanged."""

MAX_ENTRIES = 1_000_000
"""A folder with more entries than this is not stamped (None): walking it would cost more than it saves."""


class FolderStamp(NamedTuple):
    digest: str
    settled: bool
    """Every entry's mtime was older than `RACY_NS` when the stamp was taken."""
    files: dict[str, tuple[int, int, int, int, int]]
    """Regular files by path: (device, inode, size, mtime_ns, ctime_ns)."""


def settled(st: os.stat_result) -> bool:
    """Modified long enough ago that a same-size change within the same mtime tick is ruled out."""
    return time.time_ns() - st.st_mtime_ns > RACY_NS


def stamp_folder(root: Path) -> FolderStamp | None:
    """The folder's stamp; None when it cannot be read whole (missing, unreadable entries, too many)."""
    h = hashlib.blake2b(digest_size=20)
    files: dict[str, tuple[int, int, int, int, int]] = {}
    oldest_allowed = time.time_ns() - RACY_NS
    settled = True
    todo = [str(root)]
    try:
        top = os.lstat(root)
    except OSError:
        return None
    if not stat.S_ISDIR(top.st_mode):
        return None
    h.update(
        f"{root}\0{top.st_dev}\0{top.st_ino}\0{top.st_mtime_ns}\0{top.st_ctime_ns}\n".encode("utf-8", "surrogateescape")
    )
    count = 0
    while todo:
        folder = todo.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return None
        for e in entries:
            count += 1
            if count > MAX_ENTRIES:
                return None
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                return None
            mode = st.st_mode
            line = f"{e.path}\0{mode}\0{st.st_dev}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\n"
            h.update(line.encode("utf-8", "surrogateescape"))
            if st.st_mtime_ns > oldest_allowed:
                settled = False
            if stat.S_ISDIR(mode):
                todo.append(e.path)
            elif stat.S_ISREG(mode):
                files[e.path] = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    if top.st_mtime_ns > oldest_allowed:
        settled = False
    return FolderStamp(h.hexdigest(), settled, files)
