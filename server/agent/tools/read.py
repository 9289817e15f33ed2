"""Read: a text file with line numbers, as the CLI shows it (`N<TAB>line`)."""

from __future__ import annotations

from typing import Any

from server.agent.tools.base import ToolContext, ToolError, ToolOutput, int_arg, refuse_special, schema, string_arg

MAX_BYTES = 256 * 1024
DEFAULT_LIMIT = 2000
MAX_LINE = 2000


class ReadTool:
    name = "Read"
    read_only = True

    def schema(self) -> dict[str, Any]:
        return schema(
            self.name,
            "Reads a file from the working directory. Returns lines as `N<TAB>text`, starting at 1. "
            "Use offset and limit for long files.",
            {
                "file_path": {"type": "string", "description": "The absolute path to the file to read"},
                "offset": {"type": "integer", "description": "The line number to start reading from"},
                "limit": {"type": "integer", "description": "The number of lines to read"},
            },
            ["file_path"],
        )

    def run(self, tool_input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        raw = string_arg(tool_input, "file_path")
        path = ctx.confine(raw, must_exist=True)
        if path.is_dir():
            raise ToolError(f"EISDIR: illegal operation on a directory, read '{path}'")
        offset = max(1, int_arg(tool_input, "offset") or 1)
        limit = int_arg(tool_input, "limit") or DEFAULT_LIMIT
        refuse_special(path)
        size = path.stat().st_size
        if size > MAX_BYTES and "limit" not in tool_input and "offset" not in tool_input:
            raise ToolError(
                f"File content ({size} bytes) exceeds maximum allowed size ({MAX_BYTES} bytes). "
                "Use offset and limit to read it in parts."
            )
        data = ctx.read_bytes(path)
        if b"\x00" in data[:8192]:
            raise ToolError(f"{raw} looks like a binary file; Read shows text files only")
        text = data.decode("utf-8", errors="replace")
        if not text:
            return ToolOutput(
                "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>",
                extra=_extra(raw, "", 0, 1, 0),
            )
        lines = text.split("\n")
        chosen = lines[offset - 1 : offset - 1 + limit]
        body = "\n".join(f"{offset + i}\t{line[:MAX_LINE]}" for i, line in enumerate(chosen))
        return ToolOutput(body, extra=_extra(raw, "\n".join(chosen), len(chosen), offset, len(lines)))


def _extra(path: Any, content: str, num: int, start: int, total: int) -> dict[str, Any]:
    return {
        "type": "text",
        "file": {"filePath": str(path), "content": content, "numLines": num, "startLine": start, "totalLines": total},
    }
