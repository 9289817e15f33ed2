"""Stopping a command for good: its process, its process group, and every descendant, including
those that left the group (`setsid`) and whose parent is gone: the command runs as a child
subreaper (Linux `PR_SET_CHILD_SUBREAPER`, kept across `exec`), so an orphan of its tree becomes its
child instead of init's, and is still found below it when the command is stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

_SUBREAPER = (
    "import ctypes, os, sys\n"
    "try:\n"
    "    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER\n"
    "except (OSError, AttributeError):\n"
    "    pass  # no prctl (not Linux): orphans go to init, as without this\n"
    "os.execvp(sys.argv[1], sys.argv[1:])\n"
)


def as_subreaper(argv: list[str]) -> list[str]:
    """`argv` run as a child subreaper: a small interpreter marks itself, then `exec`s `argv` (same
    pid), so the orphans of everything `argv` starts are re-parented to it while it runs."""
    return [sys.executable, "-I", "-S", "-c", _SUBREAPER, *argv]


def descendants(pid: int) -> list[int]:
    """Pids whose parent chain leads to `pid`, from /proc (empty where there is no /proc)."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            fields = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(name))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the whole tree of `proc`, which was started as the leader of its own session."""
    tree = descendants(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in tree:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
