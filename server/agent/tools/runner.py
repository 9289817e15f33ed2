"""Running one response's tool calls: read-only ones in parallel, others one by one, in order.

A failing tool never ends the turn: its error goes back to the model as an error result. Every
call runs in a daemon thread with a deadline and a cancel token of its own, so the runner comes
back within a poll interval once `should_stop()` turns true or a call outlives its time, whatever
the tool is doing; the call's token is cancelled then, which kills the processes it started, and the runner gives
the call a moment (`CLEANUP_S`) to clean up after itself."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from server.agent.cancel import CancelToken
from server.agent.tools.base import (
    DEFAULT_TIMEOUT_S,
    Tool,
    ToolCancelled,
    ToolContext,
    ToolError,
    ToolOutput,
    ToolTimedOut,
    time_limit,
)

POLL_S = 0.05
"""How often a waiting runner looks at `should_stop()`."""
MAX_PARALLEL = 10
"""Read-only calls run at once at most, as the CLI runs them (a response of 500 Greps is not 500 threads, each
holding its file's lines)."""
GRACE_S = 2.0
"""How long past its deadline a call that does not stop by itself is waited for before it is abandoned."""
CLEANUP_S = 1.0
"""How long the runner waits, after stopping the calls left unfinished, for them to clean up (a Bash call removes
its scratch folder once its tree is killed), before it returns all the same."""


@dataclass
class ToolCall:
    id: str
    name: str
    input: dict[str, Any]


def run_one(call: ToolCall, tools: dict[str, Tool], ctx: ToolContext) -> ToolOutput:
    """One call in the calling thread; the tool stops itself at `ctx.deadline` or on `ctx.cancel`."""
    tool = tools.get(call.name)
    if tool is None:
        hint = f"; available: {', '.join(tools)}" if tools else ""
        return ToolOutput(f"Error: No such tool available: {call.name}{hint}", is_error=True)
    if not isinstance(call.input, dict):
        return ToolOutput("InputValidationError: tool input must be an object", is_error=True)
    try:
        return tool.run(call.input, ctx)
    except ToolTimedOut:
        return timed_out(call, time_limit(tool, call.input, ctx))
    except ToolCancelled:
        return ToolOutput(f"{call.name} was cancelled", is_error=True)
    except ToolError as exc:
        return ToolOutput(str(exc), is_error=True)
    except (OSError, UnicodeError, ValueError) as exc:
        return ToolOutput(f"Error: {exc}", is_error=True)
    except Exception as exc:  # noqa: BLE001 - a tool bug must not crash the turn
        return ToolOutput(f"Error: {type(exc).__name__}: {exc}", is_error=True)


def timed_out(call: ToolCall, seconds: float) -> ToolOutput:
    return ToolOutput(f"{call.name} timed out after {seconds:g} s", is_error=True)


def batches(calls: list[ToolCall], tools: dict[str, Tool]) -> list[list[ToolCall]]:
    """Consecutive read-only calls form parallel batches of at most `MAX_PARALLEL`; any other call is a batch of
    its own."""
    out: list[list[ToolCall]] = []
    for call in calls:
        tool = tools.get(call.name)
        safe = tool is None or tool.read_only
        joins = out and len(out[-1]) < MAX_PARALLEL
        if safe and joins and getattr(tools.get(out[-1][0].name), "read_only", True):
            out[-1].append(call)
        else:
            out.append([call])
    return out


class _Running:
    """One call started in a daemon thread, with its own deadline and cancel token."""

    def __init__(self, call: ToolCall, tools: dict[str, Tool], ctx: ToolContext) -> None:
        self.call = call
        tool = tools.get(call.name)
        self.limit = time_limit(tool, call.input, ctx) if tool and isinstance(call.input, dict) else DEFAULT_TIMEOUT_S
        self.token = CancelToken()
        self._unlink = ctx.cancel.on_cancel(self.token.cancel) if ctx.cancel is not None else (lambda: None)
        started = time.monotonic()
        self.give_up_at = started + self.limit + GRACE_S
        own = replace(ctx, cancel=self.token, deadline=started + self.limit)
        self.output: ToolOutput | None = None
        self.done = threading.Event()
        self.thread = threading.Thread(
            target=self._run, args=(tools, own), name=f"tool-{call.name}-{call.id}", daemon=True
        )
        self.thread.start()

    def _run(self, tools: dict[str, Tool], ctx: ToolContext) -> None:
        try:
            out = run_one(self.call, tools, ctx)
            self.output = None if self.token.cancelled else out  # stopped part-way: not a result
        finally:
            self.done.set()

    def wait(self, should_stop: Callable[[], bool]) -> ToolOutput | None:
        """The call's result; a timed-out result if it outlives its time; None once `should_stop()`
        or if the call was cancelled."""
        while not self.done.wait(POLL_S):
            if should_stop():
                return None
            if time.monotonic() >= self.give_up_at:
                self.stop()
                return timed_out(self.call, self.limit)
        self._unlink()
        return None if should_stop() else self.output

    def stop(self) -> None:
        self.token.cancel()
        self._unlink()


def run_calls(
    calls: list[ToolCall],
    tools: dict[str, Tool],
    ctx: ToolContext,
    *,
    should_stop: Callable[[], bool] = lambda: False,
    on_result: Callable[[ToolCall, ToolOutput], None] | None = None,
) -> dict[str, ToolOutput]:
    """Results by call id; calls not finished or not started when `should_stop()` turned true are
    left out (their threads are told to stop and not waited for)."""
    results: dict[str, ToolOutput] = {}

    def keep(call: ToolCall, out: ToolOutput) -> None:
        results[call.id] = out
        if on_result:
            on_result(call, out)

    for batch in batches(calls, tools):
        if should_stop():
            break
        running = [_Running(c, tools, ctx) for c in batch]
        try:
            for i, r in enumerate(running):
                out = r.wait(should_stop)
                if out is None:
                    for rest in running[i:]:
                        if rest.done.is_set() and rest.output is not None:
                            keep(rest.call, rest.output)
                    return results
                keep(r.call, out)
        finally:
            for r in running:
                r.stop()  # no-op for finished calls; kills what an unfinished one started
            until = time.monotonic() + CLEANUP_S
            for r in running:  # a process that ends as the runner returns (Ctrl-C of `turn`) ends its threads too
                r.done.wait(max(0.0, until - time.monotonic()))
    return results
