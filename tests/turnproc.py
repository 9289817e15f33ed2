"""`session-lsp turn` as a real child process with the scripted test model, for the tests that
race, hold and interrupt writers. Output is read on threads so a test can wait for the turn to
get somewhere (its streamed reply) without blocking."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cli_env(config: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["CLAUDE_CONFIG_DIR"] = str(config)
    return env


def session_lsp(
    *args: str,
    config: Path,
    timeout: float = 60,
    env: dict[str, str] | None = None,
    preexec_fn: Callable[[], None] | None = None,
) -> subprocess.CompletedProcess[str]:
    """The real command line, with `env` added to the test's environment and `preexec_fn` run in the child."""
    return subprocess.run(
        [sys.executable, "-m", "server.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**cli_env(config), **(env or {})},
        timeout=timeout,
        preexec_fn=preexec_fn,
    )


def new_session(
    projects: Path,
    work: Path,
    *,
    timeout: float = 60,
    env: dict[str, str] | None = None,
    preexec_fn: Callable[[], None] | None = None,
) -> tuple[str, Path]:
    """A session made by one real `turn --new` (the scripted model echoes), run as `session_lsp` runs it."""
    done = session_lsp(
        "turn",
        "--new",
        "--cwd",
        str(work),
        "--projects-dir",
        str(projects),
        "--provider",
        "anthropic",
        "--json",
        "hello",
        config=projects.parent,
        timeout=timeout,
        env=env,
        preexec_fn=preexec_fn,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    return out["sessionId"], Path(out["path"])


class TurnProcess:
    def __init__(self, projects: Path, work: Path, prompt: str, *extra: str) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "server.cli",
                "turn",
                "--cwd",
                str(work),
                "--projects-dir",
                str(projects),
                "--provider",
                "anthropic",
                *extra,
                prompt,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env=cli_env(projects.parent),
        )
        self.pid = self.proc.pid
        self.stdout = b""
        self.stderr = b""
        self._threads = [
            threading.Thread(target=self._pump, args=(name,), daemon=True) for name in ("stdout", "stderr")
        ]
        for t in self._threads:
            t.start()

    def _pump(self, name: str) -> None:
        stream = getattr(self.proc, name)
        while True:
            chunk = os.read(stream.fileno(), 4096)
            if not chunk:
                return
            setattr(self, name, getattr(self, name) + chunk)

    def wait_output(self, needle: bytes, timeout: float = 30, stream: str = "stdout") -> float:
        """Seconds until `stream` holds `needle` (the turn got that far)."""
        began = time.monotonic()
        while needle not in getattr(self, stream):
            assert self.proc.poll() is None or needle in getattr(self, stream), (
                f"the turn ended ({self.proc.returncode}) before {needle!r}: {self.stderr[-1500:]!r}"
            )
            assert time.monotonic() - began < timeout, f"no {needle!r} in {timeout} s"
            time.sleep(0.02)
        return time.monotonic() - began

    def wait_tool(self, name: str = "Bash", timeout: float = 30) -> float:
        """Seconds until the turn started calling tool `name` (it holds its session by then)."""
        return self.wait_output(f"{name}(".encode(), timeout, "stderr")

    def interrupt(self) -> None:
        self.proc.send_signal(signal.SIGINT)

    def wait(self, timeout: float) -> tuple[int | None, float]:
        """(exit status, or None if still running after `timeout`; seconds waited)."""
        began = time.monotonic()
        try:
            rc: int | None = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = None
        for t in self._threads:
            t.join(timeout=1)
        return rc, time.monotonic() - began

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def refused_while_held(holder: TurnProcess, sid: str, path: Path, *extra: str, config: Path) -> None:
    """While `holder` runs a command that never ends in session `sid`: `rename` and `tag` (with `extra` arguments,
    as `config`'s user) are refused in one line naming the holder's pid; then the holder is interrupted, and
    nothing of theirs is in `path`."""
    try:
        holder.wait_tool()  # admitted, and running a command that never ends
        for args in (["rename", sid, "TITLE WHILE HELD"], ["tag", sid, "tag-while-held"]):
            done = session_lsp(*args, *extra, config=config)
            lines = done.stderr.strip().splitlines()
            assert done.returncode == 2 and len(lines) == 1, (args[0], done.returncode, done.stderr[-800:])
            assert "in use" in lines[0] and f"pid {holder.pid}" in lines[0], lines[0]
        holder.interrupt()
        rc, _ = holder.wait(10.0)
        assert rc == 130
    finally:
        holder.kill()
    text = path.read_text()
    assert "TITLE WHILE HELD" not in text and "tag-while-held" not in text


def live_with(marker: str) -> list[int]:
    """Pids of live processes (not zombies, not this one) whose argv holds `marker`, whatever runs them."""
    return [pid for pid, _ in _live_argv(marker)]


def commands_with(marker: str) -> list[int]:
    """Pids of live `bash -c` commands (run by the Bash tool) holding `marker` (a test's hung commands)."""
    return [pid for pid, argv in _live_argv(marker) if argv.startswith(b"bash\x00-c\x00")]


def _live_argv(marker: str) -> list[tuple[int, bytes]]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append((int(entry), cmdline))
    return found


def wait_gone(marker: str, timeout: float) -> float | None:
    """Seconds until no process holds `marker`; None if some still do after `timeout`."""
    began = time.monotonic()
    while commands_with(marker):
        if time.monotonic() - began > timeout:
            return None
        time.sleep(0.05)
    return time.monotonic() - began


def reap(marker: str) -> None:
    """Kill what a failed test left running (each hung command leads its own process group)."""
    for pid in commands_with(marker):
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def children(pid: int) -> set[int]:
    """The processes whose parent is `pid`."""
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(entry.name))
    return out


def alive(pid: int) -> bool:
    """Running, sleeping or stopped (not gone, not a zombie: the container's init may reap late)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def has_read(pid: int) -> bool:
    """A forked worker read something since its fork (its first task): it is past its start, where it arranges to
    end with its parent."""
    try:
        fields = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    except (OSError, ValueError):
        return False
    return int(fields["rchar"]) > 0


def first_index_process(
    server_pid: int, ready: Callable[[int], bool] = lambda pid: True, timeout: float = 10.0
) -> int | None:
    """The server's first index process (`server.index.prefillchild`) once `ready(pid)` holds; None if it was not
    seen so within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in children(server_pid):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"prefillchild" in cmdline and ready(pid):
                return pid
        time.sleep(0.001)
    return None
