"""Glob: files matching a pattern under a folder of the working directory, newest first.

What it reads is bounded: the listing of the folder reads at most MAX_ENTRIES folder entries (`walk.Budget`;
a folder of millions of files held every name and stat, on the order of a GB, before), and only the newest
MAX_RESULTS matches are kept while the listing is read; a listing cut there is matched as far as it went and says so."""

from __future__ import annotations

import heapq
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from server.agent.tools.base import ToolContext, ToolError, ToolOutput, schema, shown, string_arg
from server.agent.tools.patterns import glob_regex, refuse_dotdot
from server.agent.tools.walk import Budget, walk_files

MAX_RESULTS = 100
MAX_ENTRIES = 100_000
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
        budget = Budget(MAX_ENTRIES)
        count = 0

        def matching() -> Iterator[Path]:
            nonlocal count
            for e in walk_files(ctx, base, budget):
                if regex.fullmatch(shown(e.path.relative_to(base).as_posix())):
                    count += 1
                    yield e.path

        # the newest MAX_RESULTS, in the order a sort of them all gives (the key is unique), holding no more
        newest = heapq.nsmallest(MAX_RESULTS + 1, matching(), key=lambda p: (-_mtime(p), str(p)))
        note = budget.note(base, "not matched", "Use a narrower path or pattern.")
        if not count:
            return ToolOutput("No files found" + note)
        lines = [str(p) for p in newest[:MAX_RESULTS]]
        if count > MAX_RESULTS:
            lines.append("(Results are truncated. Consider using a more specific path or pattern.)")
        return ToolOutput("\n".join(lines) + note, extra={"filenames": lines, "numFiles": count})


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
