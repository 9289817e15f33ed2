"""Linux's `prctl(2)`, looked up in libc once, when this module is imported.

Found at import, before any fork: a forked worker calls it first thing (its parent-death signal) and must load
nothing then (an import or a library lookup in a forked child may wait on a lock held at the fork). The supervisor
of a Bash command (`server/agent/tools/supervise.py`) runs isolated from this package and looks it up itself.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1
PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36


def _find() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        found: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return found


_PRCTL = _find()


def prctl(option: int, arg: int = 0) -> int | None:
    """`prctl(option, arg, 0, 0, 0)`'s result (-1: refused); None where there is no `prctl` (not Linux)."""
    return None if _PRCTL is None else _PRCTL(option, arg, 0, 0, 0)


def die_with_parent(parent: int) -> None:
    """This process ends with `parent`, the process that started it (killed when that one exits, even by
    `os._exit`): Linux's parent-death signal, which fires when the thread that forked this process ends; when the
    parent is already gone, this one ends now."""
    prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))
    if os.getppid() != parent:
        os._exit(0)
