"""Bash: a shell command run in the working directory (off unless the user turns it on).

The command's working directory is the session's, and what it writes is confined by the kernel (Linux Landlock,
`landlock.py`) to that folder and to a scratch folder of its own (its `TMPDIR`, removed once nothing of the command is
left, `make_scratch`): it reads what
the person may read, but creates, changes or removes nothing outside the turn's sandbox. Where the kernel cannot
confine it, Bash is refused, unless session-lsp was started with `SESSION_LSP_BASH_SANDBOX=off`. It runs in a session
of its own under a supervisor that holds its whole tree (`processes.Supervised`); on timeout or cancel the whole tree
is killed (orphans that left the session too), when session-lsp dies by any signal the supervisor kills it, and a
background process that keeps the output open cannot keep the call waiting."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import threading
from typing import IO, Any

from server.agent.tools import landlock
from server.agent.tools.base import ToolCancelled, ToolContext, ToolError, ToolOutput, int_arg, schema, string_arg
from server.agent.tools.drain import DRAIN
from server.agent.tools.processes import Supervised
from server.agent.tools.supervise import remove_tree

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
MAX_OUTPUT = 30_000
DRAIN_S = 1.0
"""After the shell ends, how long its output may still take to close (a background job may hold it)."""
MARGIN_S = 3.0
"""Time for killing and draining, on top of the command's own timeout, before the runner gives up."""


class BashTool:
    name = "Bash"
    read_only = False

    def schema(self) -> dict[str, Any]:
        return schema(
            self.name,
            "Runs a bash command in the working directory and returns its output.",
            {
                "command": {"type": "string", "description": "The command to execute"},
                "timeout": {"type": "integer", "description": "Optional timeout in milliseconds (max 600000)"},
                "description": {"type": "string", "description": "What the command does, in 5-10 words"},
            },
            ["command"],
        )

    def time_limit(self, tool_input: dict[str, Any]) -> float:
        return timeout_ms(tool_input) / 1000 + MARGIN_S

    def run(self, tool_input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        command = string_arg(tool_input, "command") or ""
        limit_ms = timeout_ms(tool_input)
        ctx.checkpoint()
        if not sandboxed():  # unconfined: the command writes where it likes, its own TMPDIR included
            return self._run(command, limit_ms, ctx, None)
        return self._run(command, limit_ms, ctx, make_scratch())

    def _run(self, command: str, limit_ms: int, ctx: ToolContext, scratch: str | None) -> ToolOutput:
        """Run `command`, confined when it has a `scratch` folder (made for it: see `make_scratch`)."""
        env = dict(ctx.env)
        try:
            writable = None
            if scratch is not None:
                writable = confined_writes(ctx, scratch)
                env.update(TMPDIR=scratch, TMP=scratch, TEMP=scratch)
            run = Supervised(["bash", "-c", command], cwd=str(ctx.cwd), env=env, writable=writable, scratch=scratch)
        except BaseException:
            if scratch is not None:
                remove_tree(scratch)
            raise
        try:
            return self._wait(run, limit_ms, ctx, writable)
        finally:
            if scratch is not None and run.tree_ended():  # else the supervisor removes it when the tree ends
                remove_tree(scratch)

    def _wait(self, run: Supervised, limit_ms: int, ctx: ToolContext, writable: list[str] | None) -> ToolOutput:
        out, err = _Capture(run.proc.stdout), _Capture(run.proc.stderr)
        unregister = ctx.cancel.on_cancel(run.kill) if ctx.cancel is not None else (lambda: None)
        timed_out = False
        try:
            returncode = run.wait(timeout=limit_ms / 1000)
        except subprocess.TimeoutExpired:
            timed_out = True
            run.kill()
            returncode = run.wait()
        finally:
            unregister()
        if ctx.cancel is not None and ctx.cancel.cancelled:
            run.kill()
            raise ToolCancelled("cancelled")
        closed = out.join(DRAIN_S) and err.join(DRAIN_S)
        stdout, stderr = out.text(), err.text()
        text = "\n".join(part.rstrip("\n") for part in (stdout, stderr) if part.strip())
        if len(text) > MAX_OUTPUT:
            text = text[:MAX_OUTPUT] + f"\n\n... [{len(text) - MAX_OUTPUT} characters truncated] ..."
        if not closed:
            text += "\n(a background process still holds the output open; what it writes later is not shown)"
        extra = {"stdout": stdout, "stderr": stderr, "interrupted": timed_out}
        if timed_out:
            return ToolOutput(f"Command timed out after {limit_ms} ms\n{text}".strip(), is_error=True, extra=extra)
        if returncode != 0:
            hint = f"\n{CONFINED_HINT}" if writable is not None and _REFUSED.search(text) else ""
            return ToolOutput(f"{text}\nExit code {returncode}{hint}".strip(), is_error=True, extra=extra)
        return ToolOutput(text or "(no output)", extra=extra)


_REFUSED = re.compile(r"Permission denied|EACCES|Operation not permitted|EPERM")
CONFINED_HINT = (
    "(Commands may write only inside the working directory and $TMPDIR: session-lsp's sandbox refuses writes "
    "elsewhere. Starting session-lsp with SESSION_LSP_BASH_SANDBOX=off lifts it.)"
)
"""Said after a failed command's output when it reads like a refused write, for the model and the person."""
SANDBOX_SETTING = "SESSION_LSP_BASH_SANDBOX"
"""The environment variable of session-lsp that, set to `off`, lets Bash commands write anywhere the person may."""


def sandboxed() -> bool:
    """Whether commands run confined: false only when session-lsp was started with `SESSION_LSP_BASH_SANDBOX=off`.
    A `ToolError` where the kernel cannot confine a command: it is not run unconfined unasked."""
    if os.environ.get(SANDBOX_SETTING, "").strip().lower() == "off":
        return False
    if landlock.abi() < 1:
        raise ToolError(
            "Bash runs only with its writes confined to the working directory, which needs Linux Landlock (Linux "
            f"5.13 or later, with Landlock on); this system offers none. Start session-lsp with {SANDBOX_SETTING}=off "
            "to run commands unconfined."
        )
    return True


def confined_writes(ctx: ToolContext, scratch: str) -> list[str] | None:
    """The folders a command may write below: the turn's sandbox root and its scratch folder; None (no confinement)
    only when session-lsp was started with `SESSION_LSP_BASH_SANDBOX=off`; a `ToolError` as `sandboxed` says."""
    return [str(ctx.root), scratch] if sandboxed() else None


def make_scratch() -> str:
    """A private folder (0700) for a confined call's temporary files (its `TMPDIR`), in the temporary folder by its
    real path. It is removed once nothing of the command's tree is left to write into it (`supervise.remove_tree`,
    which follows no link): by the call, as it ends, or when it timed out or was cancelled, once the tree is killed;
    by the supervisor, when what the command left in the background ends (at the latest with session-lsp). An
    unconfined call gets none: it may write in the person's own temporary folder, as any program they run."""
    return tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=os.path.realpath(tempfile.gettempdir()))


SCRATCH_PREFIX = "session-lsp-bash-"


def timeout_ms(tool_input: dict[str, Any]) -> int:
    """The `timeout` parameter: milliseconds, default 120000, at most 600000 (larger is capped)."""
    value = int_arg(tool_input, "timeout")
    if value is None:
        return DEFAULT_TIMEOUT_MS
    if value <= 0:
        raise ToolError(f"InputValidationError: `timeout` must be a positive number of milliseconds, got {value}")
    return min(value, MAX_TIMEOUT_MS)


class _Capture:
    """One output stream of the command, read to its end by the drain's thread (`drain.DRAIN`), keeping what a
    result can show."""

    KEEP = 4 * MAX_OUTPUT

    def __init__(self, stream: IO[bytes] | None) -> None:
        self.chunks: list[bytes] = []
        self.kept = 0
        self.ended = DRAIN.read(stream, self._take) if stream is not None else _ENDED

    def _take(self, chunk: bytes) -> None:
        if self.kept < self.KEEP:
            self.chunks.append(chunk[: self.KEEP - self.kept])
            self.kept += len(self.chunks[-1])

    def join(self, timeout: float) -> bool:
        return self.ended.wait(timeout)

    def text(self) -> str:
        return b"".join(list(self.chunks)).decode("utf-8", errors="replace")


_ENDED = threading.Event()
_ENDED.set()
