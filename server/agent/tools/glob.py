"""Glob: files matching a pattern under a folder of the working directory, newest first."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from server.agent.tools.base import ToolContext, ToolError, ToolOutput, schema, shown, string_arg
from server.agent.tools.patterns import glob_regex, refuse_dotdot
from server.agent.tools.walk import walk_files

MAX_RESULTS = 100
_MAGIC = set("*?[{")


class GlobTool:
    name = "Glob"
    read_only = True

    def schema(self) -> dict[str, Any]:
        return schema(
            self.name,
            'Finds files by glob pattern (e.g. "**/*.py", "src/**/*.ts"), most recently modified first.',
            {
                "pattern": {"type": "string", "description": "The glob pattern to match files against"},
                "path": {"type": "string", "description": "The folder to search in (default: the working directory)"},
            },
            ["pattern"],
        )

    def run(self, tool_input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        pattern = string_arg(tool_input, "pattern") or ""
        if not pattern:
            raise ToolError("InputValidationError: `pattern` is empty")
        base = ctx.confine(string_arg(tool_input, "path", required=False) or str(ctx.cwd), must_exist=True)
        if not base.is_dir():
            raise ToolError(f"Path is not a directory: {base}")
        if Path(pattern).is_absolute():
            base, pattern = _split_absolute(pattern, ctx)
        refuse_dotdot(pattern)
        regex = glob_regex(pattern)
        matches = [e.path for e in walk_files(ctx, base) if regex.fullmatch(shown(e.path.relative_to(base).as_posix()))]
        matches.sort(key=lambda p: (-_mtime(p), str(p)))
        if not matches:
            return ToolOutput("No files found")
        lines = [str(p) for p in matches[:MAX_RESULTS]]
        if len(matches) > MAX_RESULTS:
            lines.append("(Results are truncated. Consider using a more specific path or pattern.)")
        return ToolOutput("\n".join(lines), extra={"filenames": lines, "numFiles": len(matches)})


def _split_absolute(pattern: str, ctx: ToolContext) -> tuple[Path, str]:
    """An absolute pattern: its literal leading folders (resolved, and confined) become the folder
    searched, the rest the pattern."""
    parts = Path(pattern).parts[1:]
    literal = next((i for i, part in enumerate(parts) if _MAGIC & set(part)), len(parts) - 1)
    refuse_dotdot("/".join(parts[literal:]))
    base = ctx.confine(os.path.join("/", *parts[:literal]), must_exist=True)
    if not base.is_dir():
        raise ToolError(f"Path is not a directory: {base}")
    return base, "/".join(parts[literal:])


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
