"""Bash: a shell command run in the working directory (off unless the user turns it on).

The command's working directory is the session's; a shell can still reach outside it, which is
why the tool is opt-in."""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Any

from server.agent.tools.base import ToolContext, ToolError, ToolOutput, int_arg, schema, string_arg

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
MAX_OUTPUT = 30_000


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

    def run(self, tool_input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        command = string_arg(tool_input, "command") or ""
        timeout_ms = min(int_arg(tool_input, "timeout") or DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS)
        proc = subprocess.Popen(
            ["bash", "-c", command],
            cwd=str(ctx.cwd),
            env=ctx.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
        stop_watching = ctx.cancel.on_cancel(lambda: _kill_group(proc)) if ctx.cancel else (lambda: None)
        try:
            out, err = proc.communicate(timeout=timeout_ms / 1000)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.communicate()
            raise ToolError(f"Command timed out after {timeout_ms} ms") from None
        finally:
            stop_watching()
        if ctx.cancel is not None and ctx.cancel.cancelled:
            extra = {"stdout": out, "stderr": err, "interrupted": True}
            return ToolOutput("Command interrupted", is_error=True, extra=extra)
        text = "\n".join(part.rstrip("\n") for part in (out, err) if part.strip())
        if len(text) > MAX_OUTPUT:
            text = text[:MAX_OUTPUT] + f"\n\n... [{len(text) - MAX_OUTPUT} characters truncated] ..."
        extra = {"stdout": out, "stderr": err, "interrupted": False}
        if proc.returncode != 0:
            return ToolOutput(f"{text}\nExit code {proc.returncode}".strip(), is_error=True, extra=extra)
        return ToolOutput(text or "(no output)", extra=extra)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """The command and everything it started (its own session): the turn was cancelled or timed out."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
