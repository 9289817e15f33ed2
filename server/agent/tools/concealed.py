"""This process's environment and memory kept from the commands it starts.

The commands a model runs get an environment without the credentials (`base.tool_environment`), but on Linux a
process of the same user may read another's `/proc/<pid>/environ` (the environment the process started with,
whatever it removed since), its `mem`, or attach a debugger: a Bash call walking up to this process would read
the provider's key. Marked not dumpable (`prctl(PR_SET_DUMPABLE, 0)`), this process's `/proc` files belong to
root and no process of its user may trace it. What it starts runs a new program and is dumpable again (the
kernel resets the flag on `execve`), so nothing it runs changes; a process forked without one (a first-index
worker) stays concealed. The cost: no core dump, and a debugger must run as root.
"""

from __future__ import annotations

import threading

from server.prctl import PR_GET_DUMPABLE, PR_SET_DUMPABLE, prctl

_done = False
_lock = threading.Lock()


def conceal_process() -> bool:
    """Mark this process not dumpable (once); whether it is now. False where there is no `prctl` (not Linux)."""
    global _done
    with _lock:
        if _done:
            return True
        if prctl(PR_SET_DUMPABLE, 0) != 0 or prctl(PR_GET_DUMPABLE) != 0:
            return False
        _done = True
        return True
