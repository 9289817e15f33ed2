"""How much of a folder the native watcher covers: the system's inotify limits, seen from inside.

Linux allows each user `fs.inotify.max_user_instances` inotify instances and `fs.inotify.max_user_watches`
watches, one per folder watched. Out of instances, the native observer cannot start; out of watches, watchdog
watches the projects folder but silently leaves out the folders it could not add (their sessions would go
stale). `uncovered` compares the folders below the projects folder with the watches this process holds.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

LIMIT_ERRORS = frozenset({errno.ENOSPC, errno.EMFILE, errno.ENFILE, errno.ENOMEM})
"""What inotify answers when a limit is reached (watches, instances, files, kernel memory)."""


def limit_reason(exc: OSError) -> str | None:
    """Why the native watcher cannot go on, for a person, or None when `exc` is not a limit."""
    if exc.errno == errno.EMFILE:
        return "no inotify instance left for this user (fs.inotify.max_user_instances)"
    if exc.errno == errno.ENOSPC:
        return "the inotify watch limit is reached (fs.inotify.max_user_watches)"
    if exc.errno in LIMIT_ERRORS:
        return f"the system refused a file watch ({exc.strerror})"
    return None


def inotify_watches() -> int | None:
    """Watches held by this process's inotify instances, from /proc; None where /proc does not say."""
    total, seen = 0, False
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return None
    for name in names:
        try:
            if os.readlink(f"/proc/self/fd/{name}") != "anon_inode:inotify":
                continue
            with open(f"/proc/self/fdinfo/{name}", encoding="ascii", errors="replace") as fh:
                total += sum(1 for line in fh if line.startswith("inotify wd:"))
            seen = True
        except OSError:
            continue
    return total if seen else None


def folders_under(root: Path) -> int:
    """The folders at and below `root`, links not followed: what a recursive watch must cover."""
    count = 0
    for _folder, _dirs, _files in os.walk(root, followlinks=False):
        count += 1
    return count


def uncovered(root: Path) -> tuple[int, int] | None:
    """(folders watched, folders) when fewer folders are watched than there are, else None."""
    watched = inotify_watches()
    if watched is None:
        return None
    folders = folders_under(root)
    return (watched, folders) if watched < folders else None
