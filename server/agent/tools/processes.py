"""Starting a command so that it can be stopped for good, and stopping it: its process, its process group,
and every descendant, including those that left the group (`setsid`) and whose parent is gone.

A command runs under `supervise.py`, a child subreaper that holds its whole tree (an orphan of the tree
becomes the supervisor's child instead of init's) and kills all of it when this process dies by any
signal: each supervisor reads the lifeline, a pipe whose write end only this process holds, and the
kernel closes it however this process ends.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from server.agent.tools.concealed import conceal_process
from server.agent.tools.drain import DRAIN
from server.agent.tools.supervise import KILL_ROUNDS, descendants

SUPERVISOR = Path(__file__).with_name("supervise.py")

_lifeline: tuple[int, int] | None = None
"""(read end, write end) of this process's lifeline; the write end stays open, unused, until the process ends."""
_lifeline_lock = threading.Lock()


def lifeline() -> int:
    """The read end of this process's lifeline (made once per process)."""
    global _lifeline
    with _lifeline_lock:
        if _lifeline is None:
            _lifeline = os.pipe()
        return _lifeline[0]


def _forget_lifeline() -> None:
    """In a forked child (a first-index worker): the parent's lifeline is not the child's to hold open."""
    global _lifeline, _lifeline_lock
    _lifeline_lock = threading.Lock()  # another thread of the parent may have held it
    if _lifeline is not None:
        for fd in _lifeline:
            try:
                os.close(fd)
            except OSError:
                pass
        _lifeline = None


os.register_at_fork(after_in_child=_forget_lifeline)


class Supervised:
    """`argv` started under the supervisor, in a session of its own, its output on pipes (`popen`: more of
    `subprocess.Popen`'s arguments, such as `text`)."""

    def __init__(self, argv: list[str], *, cwd: str, env: Mapping[str, str] | None, **popen: Any) -> None:
        conceal_process()  # before anything of the model's runs: it could read this process's environment
        line = lifeline()
        self._status, status_w = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(SUPERVISOR), str(line), str(status_w), *argv],
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                pass_fds=(line, status_w),
                **popen,
            )
        except BaseException:
            os.close(self._status)
            raise
        finally:
            os.close(status_w)
        self.returncode: int | None = None

    def wait(self, timeout: float | None = None) -> int:
        """The command's exit status (negative: the signal that ended it), once the command itself ended;
        what it left running in the background may still run. `subprocess.TimeoutExpired` after `timeout`."""
        if self.returncode is not None:
            return self.returncode
        waiting = select.poll()  # not select(): a busy server's descriptors may number past FD_SETSIZE
        waiting.register(self._status, select.POLLIN)
        if not waiting.poll(None if timeout is None else max(0, int(timeout * 1000))):
            raise subprocess.TimeoutExpired(self.proc.args, timeout or 0)
        data = b""
        while chunk := os.read(self._status, 64):
            data += chunk
        os.close(self._status)
        if data:
            self.returncode = int(data)
        else:  # the supervisor itself was killed before the command ended (by the command, `kill -9 $PPID`):
            # its group would run on, held by no one, past the call, a cancel and session-lsp itself; its pid is
            # still the group's (the supervisor is not reaped yet), so this reaches no one else
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.returncode = self.proc.wait()
        DRAIN.reap(self.proc)  # it stays while a background job of the command runs
        return self.returncode

    def kill(self) -> None:
        """SIGKILL the whole tree, the supervisor included."""
        kill_tree(self.proc)


def kill_tree(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL the whole tree of `proc`, which was started as the leader of its own session: first everything below
    it, round after round while `proc` (the supervisor, a subreaper) is alive to take in what a dying process
    orphans (a loop starting `setsid` children would otherwise hand those started after one look at the tree to
    init, out of reach), then `proc` with its process group, and what is left below. Once `proc` was reaped its pid
    may be another process's: only its group is killed then."""
    if proc.returncode is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        return
    for _ in range(KILL_ROUNDS):
        below = descendants(proc.pid, living=True)
        if not below:
            break
        _kill_each(below)
    tree = descendants(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    _kill_each(tree)


def _kill_each(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
