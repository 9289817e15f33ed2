"""How much of a folder the native watcher covers: the system's inotify limits, seen from inside.

Linux allows each user `fs.inotify.max_user_instances` inotify instances and `fs.inotify.max_user_watches`
watches, one per folder watched. Out of instances, the native observer cannot start; out of watches, watchdog
watches the projects folder but silently leaves out the folders it could not add (their sessions would go
stale). `uncovered` compares the folders below the projects folder with the watches this process holds. A process
at its own open-file limit (`ulimit -n`) gets the same EMFILE as one out of instances: `limit_reason` tells them
apart by counting the descriptors the process holds.
"""

from __future__ import annotations

import errno
import os
import resource
from pathlib import Path

LIMIT_ERRORS = frozenset({errno.ENOSPC, errno.EMFILE, errno.ENFILE, errno.ENOMEM})
"""What inotify answers when a limit is reached (watches, instances, files, kernel memory)."""
INSTANCES = "fs.inotify.max_user_instances"
WATCHES = "fs.inotify.max_user_watches"
OPEN_FILES = "ulimit -n"
WATCH_LIMIT = f"the inotify watch limit is reached ({WATCHES})"
"""The reason when no watch is left: from a refused watch, or from the coverage check (with its counts)."""
FD_MARGIN = 4
"""Descriptors below the open-file limit still taken as at it: what a failed start opened may be closed already."""


def limit_reason(exc: OSError) -> str | None:
    """Why the native watcher cannot go on, for a person, or None when `exc` is not a limit."""
    if exc.errno == errno.EMFILE:
        fds = descriptors()
        if fds is not None and fds[0] >= fds[1] - FD_MARGIN:
            return open_file_limit_reason(*fds)
        return f"no inotify instance left for this user ({INSTANCES})"
    if exc.errno == errno.ENOSPC:
        return WATCH_LIMIT
    if exc.errno in LIMIT_ERRORS:
        return f"the system refused a file watch ({exc.strerror})"
    return None


def open_file_limit_reason(open_fds: int, soft: int) -> str:
    """The reason when the process itself has no descriptor left."""
    return f"the process's open-file limit ({OPEN_FILES}) is reached: {open_fds} of {soft} file descriptors open"


def descriptors() -> tuple[int, int] | None:
    """(descriptors open, soft RLIMIT_NOFILE) of this process; None without a finite limit or /proc."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        return len(os.listdir("/proc/self/fd")) - 1, soft  # less the one listing them
    except OSError as exc:
        return (soft, soft) if exc.errno == errno.EMFILE else None  # not even one left to list them


def limit_advice(reason: str) -> str:
    """What to change for the limit `reason` names (from `limit_reason` or the coverage check)."""
    if OPEN_FILES in reason:
        return "Raise the server's open-file limit (ulimit -n, or LimitNOFILE= for a service) and restart it."
    if INSTANCES in reason:
        return f"Raise the limit (e.g. sudo sysctl {INSTANCES}=1024) and restart the server."
    if WATCHES in reason:
        return f"Raise the limit (e.g. sudo sysctl {WATCHES}=524288) and restart the server."
    return "Restart the server once the system has the resources again."


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
