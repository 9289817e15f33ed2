"""LS: the entries of a folder of the working directory, as an indented tree one level deep."""

from __future__ import annotations

from typing import Any

from server.agent.tools.base import ToolContext, ToolError, ToolOutput, schema, string_arg
from server.agent.tools.patterns import glob_regex
from server.agent.tools.walk import SKIP_DIRS, list_dir

MAX_ENTRIES = 1000


class LSTool:
    name = "LS"
    read_only = True

    def schema(self) -> dict[str, Any]:
        return schema(
            self.name,
            "Lists the files and folders in a folder of the working directory.",
            {
                "path": {"type": "string", "description": "The absolute path to the folder to list"},
                "ignore": {"type": "array", "items": {"type": "string"}, "description": "Glob patterns to skip"},
            },
            ["path"],
        )

    def run(self, tool_input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        folder = ctx.confine(string_arg(tool_input, "path"), must_exist=True)
        if not folder.is_dir():
            raise ToolError(f"Not a directory: {folder}")
        ignore = [glob_regex(p) for p in tool_input.get("ignore") or [] if isinstance(p, str)]
        entries = [
            e
            for e in list_dir(ctx, folder)
            if e.path.name not in SKIP_DIRS and not any(r.fullmatch(e.path.name) for r in ignore)
        ]
        lines = [f"- {folder}/"]
        for entry in entries[:MAX_ENTRIES]:
            lines.append(f"  - {entry.path.name}{'/' if entry.is_dir else ''}")
        if len(entries) > MAX_ENTRIES:
            lines.append(f"  (and {len(entries) - MAX_ENTRIES} more)")
        return ToolOutput("\n".join(lines))
