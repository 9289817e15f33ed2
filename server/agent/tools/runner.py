"""Running one response's tool calls: read-only ones in parallel, others one by one, in order.

A failing tool never ends the turn: its error goes back to the model as an error result."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from server.agent.tools.base import Tool, ToolContext, ToolError, ToolOutput

MAX_PARALLEL = 8


@dataclass
class ToolCall:
    id: str
    name: str
    input: dict[str, Any]


def run_one(call: ToolCall, tools: dict[str, Tool], ctx: ToolContext) -> ToolOutput:
    tool = tools.get(call.name)
    if tool is None:
        hint = f"; available: {', '.join(tools)}" if tools else ""
        return ToolOutput(f"Error: No such tool available: {call.name}{hint}", is_error=True)
    if not isinstance(call.input, dict):
        return ToolOutput("InputValidationError: tool input must be an object", is_error=True)
    try:
        return tool.run(call.input, ctx)
    except ToolError as exc:
        return ToolOutput(str(exc), is_error=True)
    except (OSError, UnicodeError, ValueError) as exc:
        return ToolOutput(f"Error: {exc}", is_error=True)
    except Exception as exc:  # noqa: BLE001 - a tool bug must not crash the turn
        return ToolOutput(f"Error: {type(exc).__name__}: {exc}", is_error=True)


def batches(calls: list[ToolCall], tools: dict[str, Tool]) -> list[list[ToolCall]]:
    """Consecutive read-only calls form one parallel batch; any other call is a batch of its own."""
    out: list[list[ToolCall]] = []
    for call in calls:
        tool = tools.get(call.name)
        safe = tool is None or tool.read_only
        if safe and out and out[-1] and getattr(tools.get(out[-1][0].name), "read_only", True):
            out[-1].append(call)
        else:
            out.append([call])
    return out


def run_calls(
    calls: list[ToolCall],
    tools: dict[str, Tool],
    ctx: ToolContext,
    *,
    should_stop: Callable[[], bool] = lambda: False,
    on_result: Callable[[ToolCall, ToolOutput], None] | None = None,
) -> dict[str, ToolOutput]:
    """Results by call id; calls not started because `should_stop()` turned true are left out."""
    results: dict[str, ToolOutput] = {}
    with ThreadPoolExecutor(max_workers=MAX_PARALLEL, thread_name_prefix="tool") as pool:
        for batch in batches(calls, tools):
            if should_stop():
                break
            futures = [(c, pool.submit(run_one, c, tools, ctx)) for c in batch]
            for call, fut in futures:
                out = fut.result()
                results[call.id] = out
                if on_result:
                    on_result(call, out)
    return results
