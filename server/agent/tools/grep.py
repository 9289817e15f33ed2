"""Grep: a regular expression over the files of the working directory (pure Python, no ripgrep)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from server.agent.tools.base import ToolContext, ToolError, ToolOutput, int_arg, schema, string_arg
from server.agent.tools.glob import glob_regex, walk_files

MAX_FILE_BYTES = 2 * 1024 * 1024
DEFAULT_HEAD = 250
MODES = ("files_with_matches", "content", "count")


class GrepTool:
    name = "Grep"
    read_only = True

    def schema(self) -> dict[str, Any]:
        return schema(
            self.name,
            "Searches file contents with a regular expression. output_mode: files_with_matches "
            "(default), content (matching lines) or count.",
            {
                "pattern": {"type": "string", "description": "The regular expression to search for"},
                "path": {"type": "string", "description": "File or folder to search (default: working directory)"},
                "glob": {"type": "string", "description": 'Only files matching this glob (e.g. "*.js")'},
                "output_mode": {"type": "string", "enum": list(MODES)},
                "-i": {"type": "boolean", "description": "Case insensitive search"},
                "-n": {"type": "boolean", "description": "Show line numbers (content mode)"},
                "head_limit": {"type": "integer", "description": "Show only the first N entries"},
            },
            ["pattern"],
        )

    def run(self, tool_input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        pattern = string_arg(tool_input, "pattern") or ""
        flags = re.IGNORECASE if tool_input.get("-i") else 0
        try:
            regex = re.compile(pattern, flags)
        except re.error as exc:
            raise ToolError(f"Invalid regular expression {pattern!r}: {exc}") from exc
        mode = tool_input.get("output_mode") or "files_with_matches"
        if mode not in MODES:
            raise ToolError(f"InputValidationError: output_mode must be one of {', '.join(MODES)}")
        base = ctx.confine(string_arg(tool_input, "path", required=False) or str(ctx.cwd), must_exist=True)
        files = [base] if base.is_file() else walk_files(base)
        file_glob = string_arg(tool_input, "glob", required=False)
        if file_glob:
            g = glob_regex(file_glob)
            files = [f for f in files if g.fullmatch(f.name) or g.fullmatch(_rel(f, base))]
        head = int_arg(tool_input, "head_limit") or DEFAULT_HEAD
        lines: list[str] = []
        hits = 0
        for path in sorted(files):
            found = _search(path, regex)
            if not found:
                continue
            hits += 1
            if mode == "files_with_matches":
                lines.append(str(path))
            elif mode == "count":
                lines.append(f"{path}:{len(found)}")
            else:
                for number, text in found:
                    lines.append(f"{path}:{number}:{text}" if tool_input.get("-n") else f"{path}:{text}")
        if not lines:
            return ToolOutput("No matches found" if mode == "content" else "No files found")
        shown = lines[:head]
        if mode == "files_with_matches":
            shown.insert(0, f"Found {hits} file{'s' if hits != 1 else ''}")
        return ToolOutput("\n".join(shown), extra={"mode": mode, "numFiles": hits})


def _rel(path: Path, base: Path) -> str:
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return path.name


def _search(path: Path, regex: re.Pattern[str]) -> list[tuple[int, str]]:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return []
        data = path.read_bytes()
    except OSError:
        return []
    if b"\x00" in data[:8192]:
        return []
    text = data.decode("utf-8", errors="replace")
    return [(i, line) for i, line in enumerate(text.splitlines(), 1) if regex.search(line)]
