"""Starting a command so that it can be stopped for good, and stopping it: its process, its process group,
and every descendant, including those that left the group (`setsid`) and whose parent is gone.

A command runs under `supervise.py`, a child subreaper that holds its whole tree (an orphan of the tree
becomes the supervisor's child instead of init's) and kills all of it when this process dies by any
signal: each supervisor reads the lifeline, a pipe whose write end only this process holds, and the
kernel closes it however this process ends. The supervisor is a process group of its own in this process's
session, the command the leader of a session of its own: a supervisor the command stopped (SIGSTOP) is woken by
the kernel when this process dies (an orphaned process group with a stopped member gets SIGHUP and SIGCONT).

A command can also kill its supervisor (`kill -9 $PPID`): what the supervisor held is orphaned. A process that runs
turns (`serve`, `turn`) calls `server.subreaper.contain()` first: it becomes a child subreaper itself, so those
orphans come to it, and each time a supervisor is found dead (`sweep()`) it kills every child of its own that is in
a session not its own, with all below it. Only the tree of a command is ever in another session: what this process
starts itself (supervisors, workers, guards) stays in its session, and a session cannot be joined, only inherited
or made (`setsid`), so nothing of a command can pass for one of ours.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from server.agent.tools.concealed import conceal_process
from server.agent.tools.drain import DRAIN
from server.agent.tools.supervise import KILL_ROUNDS, below, descendants, process_table
from server.subreaper import contained

SUPERVISOR = Path(__file__).with_name("supervise.py")
SWEEP_WAIT_S = 1.0
"""How long `kill_tree` waits for a killed supervisor to be gone before sweeping what it left."""

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


def sweep() -> None:
    """Kill, and reap, every child of this process in a session not its own, with everything below it: what
    supervisors that died left (only a command's tree leaves this process's session). Round after round, for a
    tree that forks while it is killed. Nothing when this process is not contained (`server.subreaper`): orphans go
    to init."""
    if not contained():
        return
    me, mine = os.getpid(), os.getsid(0)
    for _ in range(KILL_ROUNDS):
        table = process_table()
        strays = [pid for pid, (_, ppid, sid) in table.items() if ppid == me and sid != mine]
        living = [pid for pid in strays if table[pid][0] != "Z"]
        living += [pid for stray in strays for pid in below(stray, table)]
        _kill_each(living)
        for pid in strays:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # only these pids: another child's status is its Popen's to take
        if not living:
            return
        time.sleep(0.01)


class Supervised:
    """`argv` started under the supervisor (a process group of its own), in a session of its own, its output on
    pipes (`popen`: more of `subprocess.Popen`'s arguments, such as `text`)."""

    def __init__(
        self,
        argv: list[str],
        *,
        cwd: str,
        env: Mapping[str, str] | None,
        writable: list[str] | None = None,
        scratch: str | None = None,
        **popen: Any,
    ) -> None:
        """`writable`: the folders below which `argv` and all it starts may write (confined by the kernel before it
        starts, `landlock.py`); None: no confinement. `scratch`: a folder the supervisor removes as it ends, once
        nothing of the tree is left (`supervise.remove_tree`)."""
        conceal_process()  # before anything of the model's runs: it could read this process's environment
        line = lifeline()
        writes = json.dumps(writable) if writable is not None else ""
        self._status, status_w = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(SUPERVISOR), str(line), str(status_w), writes, scratch or "", *argv],
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                process_group=0,  # in our session: see the module's docstring
                pass_fds=(line, status_w),
                **popen,
            )
        except BaseException:
            os.close(self._status)
            raise
        finally:
            os.close(status_w)
        self.returncode: int | None = None
        self.command: int | None = None
        """The command's pid, once the supervisor said it (the leader of the command's session and group)."""
        self._said = b""

    def wait(self, timeout: float | None = None) -> int:
        """The command's exit status (negative: the signal that ended it), once the command itself ended;
        what it left running in the background may still run. `subprocess.TimeoutExpired` after `timeout`."""
        if self.returncode is not None:
            return self.returncode
        waiting = select.poll()  # not select(): a busy server's descriptors may number past FD_SETSIZE
        waiting.register(self._status, select.POLLIN)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:  # the command's pid and a newline, then its exit status, then end of file
            left = None if deadline is None else max(0, int((deadline - time.monotonic()) * 1000))
            if not waiting.poll(left):
                raise subprocess.TimeoutExpired(self.proc.args, timeout or 0)
            chunk = os.read(self._status, 64)
            self._said += chunk
            pid, said, status = self._said.partition(b"\n")
            if said and self.command is None:
                self.command = int(pid)
            if not chunk:
                break
        os.close(self._status)
        if status:
            self.returncode = int(status)
        else:  # the supervisor itself was killed before the command ended (by the command, `kill -9 $PPID`):
            # the command's session would run on, held by no one, past the call, a cancel and session-lsp itself.
            # Its session is killed (its leader, a child of init or of ours now, is seldom reaped this soon), and
            # once the supervisor is gone (its orphans are ours then, when contained) everything it left
            if self.command is not None:
                _kill_each([pid for pid, (_, _, sid) in process_table().items() if sid == self.command])
            self.returncode = self.proc.wait()
            sweep()
        DRAIN.reap(self.proc, ended=_ended)  # it stays while a background job of the command runs
        return self.returncode

    def kill(self) -> None:
        """SIGKILL the whole tree, the supervisor included."""
        kill_tree(self.proc)

    def tree_ended(self) -> bool:
        """Nothing of the command's tree is alive any more (what it started in the background included): nothing
        of it can write again."""
        return self.proc.poll() is not None or not descendants(self.proc.pid, living=True)


def _ended(proc: subprocess.Popen[Any]) -> None:
    """A supervisor the drain waited for ended: if something killed it (a job of its command), sweep what it left."""
    if proc.returncode is not None and proc.returncode < 0:
        sweep()


def kill_tree(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL the whole tree of `proc` (a supervisor, the leader of its own process group): first everything below
    it, round after round while `proc` (a subreaper) is alive to take in what a dying process orphans (a loop
    starting `setsid` children would otherwise hand those started after one look at the tree to init, out of
    reach), then `proc` with its process group, and what is left below; when contained, what raced it is swept once
    it is gone. Once `proc` was reaped its pid may be another process's: it is not walked or killed then."""
    if proc.returncode is not None:  # it ended once its tree had (or was killed, and its orphans are ours)
        sweep()
        return
    for _ in range(KILL_ROUNDS):
        left = descendants(proc.pid, living=True)
        if not left:
            break
        _kill_each(left)
    tree = descendants(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    _kill_each(tree)
    if contained():  # what raced the kill is ours once the supervisor is gone
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=SWEEP_WAIT_S)
        sweep()


def _kill_each(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
