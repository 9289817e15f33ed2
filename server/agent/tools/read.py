"""Read: a text file with line numbers, as the CLI shows it (`N<TAB>line`).

The file is read in chunks and only the lines shown are kept, each cut at `LINE_BYTES` and all of
them at `WINDOW_BYTES` (as much as a whole-file Read shows), so a file larger than memory (asked for
with `offset`/`limit`, which lift the whole-file size check) costs time, bounded by the tool's
timeout, never memory.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from server.agent.tools.base import ToolContext, ToolError, ToolOutput, int_arg, refuse_special, schema, string_arg

MAX_BYTES = 256 * 1024
DEFAULT_LIMIT = 2000
MAX_LINE = 2000
LINE_BYTES = 4 * MAX_LINE
"""Bytes kept of one line: enough for the MAX_LINE characters shown."""
WINDOW_BYTES = MAX_BYTES
"""Bytes kept of all the lines shown; lines past it are left out. No more than a whole-file Read may show: what is
kept goes to the model and into the transcript (before, 8 MiB: a Read of 2000 long lines sent 2 MB, half a million
tokens, which no later request of the session could carry again, and wrote a 10 MB row)."""
CHUNK = 1 << 20
BINARY_PROBE = 8192


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
        shown, total, size = _read_lines(ctx, path, raw, offset - 1, limit)
        if size == 0:
            return ToolOutput(
                "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>",
                extra=_extra(raw, "", 0, 1, 0),
            )
        chosen = [line.decode("utf-8", errors="replace") for line in shown]
        body = "\n".join(f"{offset + i}\t{line[:MAX_LINE]}" for i, line in enumerate(chosen))
        return ToolOutput(body, extra=_extra(raw, "\n".join(chosen), len(chosen), offset, total))


def _read_lines(ctx: ToolContext, path: Path, raw: str | None, first: int, count: int) -> tuple[list[bytes], int, int]:
    """Lines `first`..`first + count - 1` (from 0, as `text.split("\\n")` numbers them) of the file,
    each cut at LINE_BYTES, all together at WINDOW_BYTES; how many lines it has; how many bytes.
    Read in chunks: nothing else is kept."""
    fd = ctx.open_file(path)
    try:
        os.set_blocking(fd, True)
        window: list[bytearray] = []
        kept = size = line = 0
        while chunk := os.read(fd, CHUNK):
            ctx.checkpoint()
            if size < BINARY_PROBE and b"\x00" in chunk[: BINARY_PROBE - size]:
                raise ToolError(f"{raw} looks like a binary file; Read shows text files only")
            size += len(chunk)
            if line >= first + count:
                line += chunk.count(b"\n")  # past the lines shown: only count
                continue
            for i, piece in enumerate(chunk.split(b"\n")):
                line += i > 0
                if not first <= line < first + count:
                    continue
                if len(window) == line - first:
                    window.append(bytearray())
                room = min(LINE_BYTES - len(window[-1]), WINDOW_BYTES - kept, len(piece))
                window[-1] += piece[: max(room, 0)]
                kept += max(room, 0)
                if kept >= WINDOW_BYTES:
                    count = line - first + 1  # full: this line is the last one shown
    finally:
        os.close(fd)
    return [bytes(b) for b in window], line + 1, size


def _extra(path: Any, content: str, num: int, start: int, total: int) -> dict[str, Any]:
    return {
        "type": "text",
        "file": {"filePath": str(path), "content": content, "numLines": num, "startLine": start, "totalLines": total},
    }
