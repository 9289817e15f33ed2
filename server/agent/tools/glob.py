"""Glob: files matching a pattern under a folder of the working directory, newest first."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from server.agent.tools.base import ToolContext, ToolError, ToolOutput, schema, string_arg

MAX_RESULTS = 100
SKIP_DIRS = {".git", "node_modules", ".venv", "__pycache__"}


def walk_files(root: Path) -> list[Path]:
    """Every file under `root`, skipping VCS and dependency folders and symlinked folders."""
    found: list[Path] = []
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(folder.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir() and not entry.is_symlink():
                if entry.name not in SKIP_DIRS:
                    stack.append(entry)
            elif entry.is_file():
                found.append(entry)
    return found


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
            if not pattern.startswith(str(base) + "/"):
                raise ToolError(f"{pattern} is outside the working directory; access denied")
            pattern = pattern[len(str(base)) + 1 :]
        regex = glob_regex(pattern)
        matches = [p for p in walk_files(base) if regex.fullmatch(p.relative_to(base).as_posix())]
        matches.sort(key=lambda p: (-_mtime(p), str(p)))
        if not matches:
            return ToolOutput("No files found")
        lines = [str(p) for p in matches[:MAX_RESULTS]]
        if len(matches) > MAX_RESULTS:
            lines.append("(Results are truncated. Consider using a more specific path or pattern.)")
        return ToolOutput("\n".join(lines), extra={"filenames": lines, "numFiles": len(matches)})


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob with `**`, `*`, `?`, `[...]` and `{a,b}` as a regex over posix relative paths."""
    out: list[str] = []
    i = 0
    depth = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
                i = end
        elif c == "{":
            out.append("(?:")
            depth += 1
        elif c == "}" and depth:
            out.append(")")
            depth -= 1
        elif c == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + ")" * depth)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
