"""Whether this process is a child subreaper: one that runs turns (`serve`, `turn`) becomes one first thing, so
what a Bash command's killed supervisor orphans comes to it, to be ended (`server.agent.tools.processes.sweep`).

Its own module, light enough for the start of `serve`, which answers its first requests before it loads the tools.
"""

from __future__ import annotations

import os

from server.prctl import PR_SET_CHILD_SUBREAPER, prctl

_contained = False


def contain() -> bool:
    """Make this process a child subreaper; False where that is not possible (not Linux)."""
    global _contained
    _contained = prctl(PR_SET_CHILD_SUBREAPER, 1) == 0
    return _contained


def contained() -> bool:
    """This process is a child subreaper (`contain()`), and not a child forked since (the kernel does not pass
    it on)."""
    return _contained


def _not_contained() -> None:
    global _contained
    _contained = False


os.register_at_fork(after_in_child=_not_contained)
