"""The tools the embedded agent offers the model: read-only ones by default, writers on request."""

from __future__ import annotations

from collections.abc import Iterable

from server.agent.tools.base import Tool, ToolContext, ToolError, ToolOutput
from server.agent.tools.bash import BashTool
from server.agent.tools.glob import GlobTool
from server.agent.tools.grep import GrepTool
from server.agent.tools.ls import LSTool
from server.agent.tools.read import ReadTool
from server.agent.tools.write import EditTool, WriteTool

READ_ONLY = ("Read", "Glob", "Grep", "LS")
WRITERS = ("Bash", "Edit", "Write")
ALL_TOOLS: dict[str, type] = {
    "Read": ReadTool,
    "Glob": GlobTool,
    "Grep": GrepTool,
    "LS": LSTool,
    "Bash": BashTool,
    "Edit": EditTool,
    "Write": WriteTool,
}


def make_tools(enable: Iterable[str] = ()) -> dict[str, Tool]:
    """The read-only tools plus those named in `enable` (case-insensitive; "all" turns all on)."""
    wanted = {name.lower() for name in enable}
    unknown = wanted - {n.lower() for n in ALL_TOOLS} - {"all"}
    if unknown:
        raise ValueError(f"unknown tool(s): {', '.join(sorted(unknown))}; known: {', '.join(ALL_TOOLS)}")
    names = [n for n in ALL_TOOLS if n in READ_ONLY or "all" in wanted or n.lower() in wanted]
    return {n: ALL_TOOLS[n]() for n in names}


__all__ = ["ALL_TOOLS", "READ_ONLY", "WRITERS", "Tool", "ToolContext", "ToolError", "ToolOutput", "make_tools"]
