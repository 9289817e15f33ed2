"""The editor that started the server, watched: when it is gone, the server ends (LSP `initialize.processId`).

LSP asks a server to exit once the process `processId` names is gone. The server's standard input usually closes
with the editor, but not while another process still holds the pipe's other end (a child the editor left behind, a
wrapper): such a server ran on, with its turns and the commands their tools started. Only an ancestor of the server
is watched: an id from another PID namespace (an editor outside the container the server runs in) may name an
unrelated process here, whose end must not stop the server. Only a server started over stdio (its editor the
process that launched it) watches at all: `serve` records the ancestry then (`launch_ancestry`); over `--tcp` the
editor connects from anywhere, and its id, whatever process here it names (the shell that started the server),
is not watched.

On Linux the process is waited for through a pidfd (`os.pidfd_open`: readable once it has ended, whatever pid comes
next); elsewhere, or where that is refused, it is looked at every `POLL_S` seconds, its start time compared so that a
reused pid does not pass for it.
"""

from __future__ import annotations

import logging
import os
import select
import threading
import time
from collections.abc import Callable

from storage.procinfo import pid_alive, start_of, stat_fields

log = logging.getLogger(__name__)

POLL_S = 1.0
"""How often a process is looked at where it cannot be waited for."""


_launch: dict[int, str | None] | None = None
"""The ancestry `launch_ancestry` recorded; None: none was (no editor launched this server over stdio)."""


def launch_ancestry() -> dict[int, str | None]:
    """This process's parent, its parent's parent, ... (to the first process, or as far as `/proc` tells), each with
    its start time where known, as they were at the first call, recorded for `watch_parent`: `serve` over stdio calls
    it as it starts, before it answers `initialize` (an editor may be gone by the time pygls handles that request,
    the server then its orphan)."""
    global _launch
    if _launch is not None:
        return _launch
    out: dict[int, str | None] = {}
    pid = os.getppid()
    while pid > 0 and pid not in out:
        fields = stat_fields(pid)
        out[pid] = start_of(fields)
        if fields is None or len(fields) < 2:
            break
        pid = int(fields[1])
    _launch = out
    return out


def _running(pid: int, start: str | None) -> bool:
    """Alive, not a zombie, and started when it was first seen (where that is known)."""
    fields = stat_fields(pid)
    if fields is None:  # no `/proc`: only whether some process has that id
        return pid_alive(pid) and start is None
    return fields[0] != "Z" and (start is None or start_of(fields) == start)


def _wait_gone(pid: int, start: str | None) -> None:
    """Return once the process `pid` that started at `start` has ended (at once if `pid` names another by now)."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        fd = -1
    if fd >= 0:
        try:
            if not _running(pid, start):  # the pid pinned now is another process's: the one watched is gone
                return
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            while not poller.poll():
                pass
        finally:
            os.close(fd)
        return
    while _running(pid, start):
        time.sleep(POLL_S)


def watch_parent(pid: int | None, on_gone: Callable[[], None]) -> bool:
    """Call `on_gone` (on a thread of its own) once the process `pid` has ended (at once if it has already), when it
    was an ancestor of this process at its launch (`launch_ancestry`); False (nothing watched) for no id, an id
    that named no ancestor, or a server whose launch was not recorded (not started by its editor: `--tcp`)."""
    if pid is None or pid <= 1:
        return False
    ancestry = _launch
    if ancestry is None:
        log.info("processId %s: this server was not launched by its editor (over stdio): not watched", pid)
        return False
    if pid not in ancestry:
        log.info("processId %s is no ancestor of the server: not watched", pid)
        return False

    def watch() -> None:
        _wait_gone(pid, ancestry[pid])
        log.info("the editor (pid %s) is gone: ending", pid)
        on_gone()

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()
    return True
