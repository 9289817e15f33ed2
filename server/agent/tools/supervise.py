"""The program a Bash command runs under: it holds the command's whole process tree, and ends all of it
when session-lsp dies, by any signal (SIGKILL included) or exit.

Run isolated (`python -I -S supervise.py LIFELINE STATUS WRITES SCRATCH ARGV...`, by `processes.Supervised`), as a
process group of its own in session-lsp's session. WRITES is a JSON list of the folders ARGV may write below (its
writes are confined there by the kernel before it starts: `landlock.py`, loaded by its path), or empty for no
confinement. SCRATCH is the folder made for the command's temporary files (its `TMPDIR`), or empty: it is removed
(`remove_tree`) as this process ends, when nothing of the tree is left to write into it.
It marks itself a child subreaper (Linux `PR_SET_CHILD_SUBREAPER`), so
every orphan of the tree, even one that left the session (`setsid`), becomes its child; starts ARGV as the
leader of a session of its own (no controlling terminal; its process group is its pid); writes ARGV's pid and a
newline to the STATUS descriptor, and ARGV's exit status the moment ARGV ends; then stays while anything of the
tree is left (a background job outlives its shell, but not session-lsp). LIFELINE is the read end of a pipe whose
write end only session-lsp holds: when it reads end of file, session-lsp is gone, and every process below is
ended: the command's process group gets SIGINT first (the real CLI records the interruption), and after
`GRACE_S` (or at once, if the command already ended, or this process was stopped meanwhile) everything left gets
SIGKILL. SIGTERM and SIGHUP do the same; SIGINT is passed on to the command's process group.

A command that stops this process (`kill -STOP $PPID`) keeps it from reading the lifeline, but not for good: its
process group's only tie outside is session-lsp, in the same session, so when session-lsp dies the group is
orphaned, and the kernel sends an orphaned group with a stopped member SIGHUP and SIGCONT (POSIX job control).
Standard library only.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import json
import os
import select
import signal
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
STOPPING = (signal.SIGTERM, signal.SIGHUP)
HANDLED = (signal.SIGCHLD, signal.SIGINT, signal.SIGCONT, *STOPPING)
GRACE_S = 3.0
"""How long the command has to end after SIGINT, when session-lsp is gone, before everything is killed."""
KILL_ROUNDS = 100
"""Rounds of killing what is below, for a tree that forks while it is being killed."""


def process_table() -> dict[int, tuple[str, int, int]]:
    """Every process, from /proc (empty where there is none): pid to (state, parent pid, session id)."""
    table: dict[int, tuple[str, int, int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            table[int(name)] = (fields[0], int(fields[1]), int(fields[3]))
        except (OSError, IndexError, ValueError):
            continue
    return table


def below(pid: int, table: dict[int, tuple[str, int, int]], *, living: bool = True) -> list[int]:
    """The processes below `pid` in `table` (`process_table`); `living`: no zombie (one that ended and is not yet
    reaped, which killing again does nothing to)."""
    children: dict[int, list[int]] = {}
    for child, (_, ppid, _) in table.items():
        children.setdefault(ppid, []).append(child)
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            todo.append(child)
            if not (living and table[child][0] == "Z"):
                found.append(child)
    return found


def descendants(pid: int, *, living: bool = False) -> list[int]:
    """Pids whose parent chain leads to `pid`, from /proc (empty where there is no /proc); `living`: no zombie."""
    return below(pid, process_table(), living=living)


def _reap() -> list[tuple[int, int]]:
    """Every child that ended, as (pid, wait status), without waiting."""
    ended: list[tuple[int, int]] = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return ended
        if pid == 0:
            return ended
        ended.append((pid, status))


def _has_children() -> bool:
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


def kill_all_below() -> None:
    """SIGKILL every process below this one, round after round until none is left, reaping them."""
    me = os.getpid()
    for _ in range(KILL_ROUNDS):
        left = [pid for pid in descendants(me) if pid != me]
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        _reap()
    _reap()


_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_O_PATH = getattr(os, "O_PATH", 0)
REMOVE_ROUNDS = 20
"""Attempts at removing a folder that something else still fills (a tree not all killed, a second remover)."""


def remove_tree(folder: str) -> bool:
    """Remove `folder` (an absolute real path) and everything below it; whether it is gone. No link is followed:
    each folder is opened by name in the one above it with `O_NOFOLLOW`, so a link planted inside (to a folder
    outside, to `/`) is removed as a link, and nothing it leads to is touched; neither is `folder` itself when it is
    not a folder. One descriptor is held at a time (a tree nested deeper than the descriptors a process may hold is
    removed too), a way back up (`..`) must lead to the folder it came from. Tried again a bounded number of times
    while it is still there (something left writing into it)."""
    parent, name = os.path.split(folder)
    for _ in range(REMOVE_ROUNDS):
        try:
            above = os.open(parent, _FOLDER)
        except OSError:
            return not os.path.lexists(folder)
        try:
            try:
                inner = _enter(above, name)
            except FileNotFoundError:
                return True
            except OSError:
                return False  # not a folder (a link, a file): not ours to remove
            with contextlib.suppress(OSError):
                _empty(inner)
            try:
                os.rmdir(name, dir_fd=above)
                return True
            except FileNotFoundError:
                return True
            except OSError:
                continue
        finally:
            os.close(above)
    return not os.path.lexists(folder)


def _empty(top: int) -> None:
    """Remove everything in the folder open as `top` (closed here), depth first, holding one descriptor."""
    fd = top
    try:
        ids = [os.fstat(fd)]
        entered: list[str] = []
        todo = [os.listdir(fd)]
        while todo:
            if todo[-1]:
                name = todo[-1].pop()
                if _remove_entry(fd, name):
                    continue
                try:
                    inner = _enter(fd, name)
                except FileNotFoundError:
                    continue
                fd, outer = inner, fd
                os.close(outer)
                ids.append(os.fstat(fd))
                entered.append(name)
                todo.append(os.listdir(fd))
                continue
            todo.pop()
            ids.pop()
            if not todo:
                return
            outer = os.open("..", _FOLDER, dir_fd=fd)
            fd, inner = outer, fd
            os.close(inner)
            if not os.path.samestat(os.fstat(fd), ids[-1]):
                return  # moved meanwhile: `..` is some other folder, nothing of which is removed
            with contextlib.suppress(FileNotFoundError):
                os.rmdir(entered.pop(), dir_fd=fd)
    finally:
        os.close(fd)


def _enter(folder: int, name: str) -> int:
    """The folder `name` in the folder open as `folder`, opened to be emptied, taking no link (`NotADirectoryError`
    for anything but a folder). A folder of ours its command took the rights off (`chmod 000`, `chmod 500`: beyond
    Landlock) gets them back first: it is changed by its descriptor (`/proc/self/fd`), never by a name a link could
    take."""
    if not _O_PATH:
        return os.open(name, _FOLDER, dir_fd=folder)
    held = os.open(name, _O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
    try:
        st = os.fstat(held)
        if st.st_mode & 0o700 != 0o700 and st.st_uid == os.geteuid():
            with contextlib.suppress(OSError):
                os.chmod(f"/proc/self/fd/{held}", stat.S_IMODE(st.st_mode) | 0o700)
        return os.open(".", _FOLDER, dir_fd=held)
    finally:
        os.close(held)


def _remove_entry(folder: int, name: str) -> bool:
    """Remove `name` in the folder open as `folder` if it is no folder, or an empty one; whether it is gone."""
    try:
        os.unlink(name, dir_fd=folder)  # a link is removed as a link
        return True
    except FileNotFoundError:
        return True
    except (IsADirectoryError, PermissionError):
        pass  # a folder (Linux says EISDIR, POSIX EPERM)
    try:
        os.rmdir(name, dir_fd=folder)
        return True
    except FileNotFoundError:
        return True
    except OSError:
        return False


def _confinement(writes: str) -> Callable[[], None]:
    """What confines the command's writes to the folders of `writes` (a JSON list; empty: nothing)."""
    if not writes:
        return lambda: None
    folders = json.loads(writes)
    spec = importlib.util.spec_from_file_location("landlock", Path(__file__).with_name("landlock.py"))
    if spec is None or spec.loader is None:
        raise ImportError("landlock.py")
    landlock = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(landlock)
    return lambda: landlock.confine_writes(folders)


def _start(argv: list[str], closing: list[int], confine: Callable[[], None]) -> int:
    pid = os.fork()
    if pid:
        return pid
    try:
        signal.set_wakeup_fd(-1)
        for sig in HANDLED:
            signal.signal(sig, signal.SIG_DFL)
        for fd in closing:
            os.close(fd)
        os.setsid()  # out of session-lsp's session (and its terminal), and out of our group: ours is ours alone
        confine()  # never runs unconfined when asked to be: a failure ends here
        os.execvp(argv[0], argv)
    except OSError as exc:
        os.write(2, f"{argv[0]}: {exc.strerror or exc}\n".encode())
    os._exit(127)


def main(args: list[str]) -> int:
    lifeline, status_fd, scratch, argv = int(args[0]), int(args[1]), args[3], args[4:]
    confine = _confinement(args[2])
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # no prctl (not Linux): orphans go to init, and only the command's own tree is held
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    for sig in HANDLED:
        signal.signal(sig, lambda *_: None)  # the wakeup descriptor says which came
    command = _start(argv, [lifeline, status_fd, wake_r, wake_w], confine)
    try:
        os.write(status_fd, f"{command}\n".encode())
    except OSError:
        pass
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)  # the command's output is its tree's to hold, not ours
    os.close(null)
    running = True
    stopped = False
    while True:
        for pid, status in _reap():
            if pid == command and running:
                running = False
                try:
                    os.write(status_fd, str(os.waitstatus_to_exitcode(status)).encode())
                except OSError:
                    pass  # nobody reads it any more: session-lsp is gone, and the lifeline says so next
                os.close(status_fd)
        if not running and not _has_children():
            if scratch:
                remove_tree(scratch)  # nothing of the tree is left to write into it
            return 0
        try:
            ready, _, _ = select.select([lifeline, wake_r], [], [])
        except InterruptedError:
            continue
        came = os.read(wake_r, 256) if wake_r in ready else b""
        stopped = stopped or signal.SIGCONT in came
        if running and signal.SIGINT in came:
            with contextlib.suppress(OSError):
                os.killpg(command, signal.SIGINT)  # not reaped yet: its pid is still its group's
        if (lifeline in ready and not os.read(lifeline, 1)) or any(sig in STOPPING for sig in came):
            if running and not stopped:
                _interrupt(command)
            kill_all_below()
            if scratch:
                remove_tree(scratch)
            return 0 if not running else 137


def _interrupt(command: int) -> None:
    """SIGINT the command's process group, and give the command `GRACE_S` to end."""
    try:
        os.killpg(command, signal.SIGINT)
    except OSError:
        return
    deadline = time.monotonic() + GRACE_S
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(command, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == command:
            return
        time.sleep(0.02)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
