"""What every tool shares: its schema, the context it runs in, path confinement, results."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from server.agent.cancel import CancelToken


class ToolError(Exception):
    """A tool failed in a way the model should hear about (sent back as an error result)."""


@dataclass
class ToolOutput:
    content: str
    is_error: bool = False
    extra: dict[str, Any] | None = None
    """What the CLI keeps as `toolUseResult` beside the result row (optional)."""


@dataclass
class ToolContext:
    cwd: Path
    """The session's working directory; every path a tool touches must be inside it."""
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    cancel: CancelToken | None = None
    """The turn's token: a tool that can block (Bash) stops its work when it is cancelled."""

    def confine(self, raw: Any, *, must_exist: bool = False) -> Path:
        """`raw` (absolute, or relative to cwd) resolved, and checked to stay inside cwd."""
        if not isinstance(raw, str) or not raw.strip():
            raise ToolError("a path is required")
        root = Path(os.path.realpath(self.cwd))
        candidate = Path(os.path.expanduser(raw))
        if not candidate.is_absolute():
            candidate = root / candidate
        real = Path(os.path.realpath(candidate))
        if real != root and root not in real.parents:
            raise ToolError(f"{raw} is outside the working directory {root}; access denied")
        if must_exist and not real.exists():
            raise ToolError(f"File does not exist: {raw}")
        return real


class Tool(Protocol):
    name: str
    read_only: bool
    """Read-only tools are on by default and may run in parallel with each other."""

    def schema(self) -> dict[str, Any]: ...

    def run(self, tool_input: dict[str, Any], ctx: ToolContext) -> ToolOutput: ...


def schema(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "input_schema": {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        },
    }


def string_arg(tool_input: dict[str, Any], key: str, *, required: bool = True) -> str | None:
    value = tool_input.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise ToolError(f"InputValidationError: `{key}` must be a string")
    return value


def int_arg(tool_input: dict[str, Any], key: str) -> int | None:
    value = tool_input.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"InputValidationError: `{key}` must be an integer")
    return value
