"""Grep: a regular expression (RE2 syntax, linear time) over the files of the working directory.

What it answers goes to the model and into the transcript, so it is bounded whatever the files hold:
a matching line is cut at MAX_COLUMNS characters, only `head_limit` lines are kept, and the answer is
cut at MAX_OUTPUT characters. What it reads is bounded too: the files searched are listed, then sorted, and
the listing reads at most MAX_ENTRIES folder entries (a folder of millions of files held every name, on
the order of a GB, until the timeout); a listing cut there is searched as far as it went and says so."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from server.agent.tools.base import (
    ToolCancelled,
    ToolContext,
    ToolError,
    ToolOutput,
    ToolTimedOut,
    int_arg,
    refuse_special,
    schema,
    shown,
    string_arg,
)
from server.agent.tools.patterns import LinePattern, glob_regex, refuse_dotdot
from server.agent.tools.walk import Budget, Entry, walk_files

MAX_FILE_BYTES = 2 * 1024 * 1024
DEFAULT_HEAD = 250
MAX_COLUMNS = 500
MAX_OUTPUT = 30_000
MODES = ("files_with_matches", "content", "count")
MAX_ENTRIES = 100_000
"""Folder entries (files and folders) one search lists at most."""
CHECK_EVERY = 2000
"""Matching lines between two checks for cancellation or the deadline."""


class GrepTool:
    name = "Grep"
    read_only = True

    def schema(self) -> dict[str, Any]:
        return schema(
            self.name,
            "Searches file contents with a regular expression (RE2 syntax). output_mode: files_with_matches "
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
        regex = LinePattern(pattern, ignore_case=bool(tool_input.get("-i")))
        mode = tool_input.get("output_mode") or "files_with_matches"
        if mode not in MODES:
            raise ToolError(f"InputValidationError: output_mode must be one of {', '.join(MODES)}")
        base = ctx.confine(string_arg(tool_input, "path", required=False) or str(ctx.cwd), must_exist=True)
        files: Iterable[Entry]
        budget = Budget(MAX_ENTRIES)
        if base.is_dir():
            files = walk_files(ctx, base, budget)
        else:
            refuse_special(base)
            files = [Entry(base, base, False, False, False)]
        file_glob = string_arg(tool_input, "glob", required=False)
        if file_glob:
            refuse_dotdot(file_glob, "Grep's glob")
            g = glob_regex(file_glob)
            files = [f for f in files if g.fullmatch(shown(f.path.name)) or g.fullmatch(shown(_rel(f.path, base)))]
        head = int_arg(tool_input, "head_limit") or DEFAULT_HEAD
        lines: list[str] = []
        hits = 0
        listed = sorted(files, key=lambda e: e.path)
        note = budget.note(base, "not searched", "Search a narrower path.")
        for entry in listed:
            keep = min(max(head - len(lines), 0), MAX_OUTPUT) if mode == "content" else 0
            count, found = _search(ctx, entry, regex, keep, first_only=mode == "files_with_matches")
            if not count:
                continue
            hits += 1
            path = entry.path
            if mode == "files_with_matches":
                lines.append(str(path))
            elif mode == "count":
                lines.append(f"{path}:{count}")
            else:
                for number, text in found:
                    lines.append(f"{path}:{number}:{text}" if tool_input.get("-n") else f"{path}:{text}")
        if not lines:
            return ToolOutput(("No matches found" if mode == "content" else "No files found") + note)
        shown = lines[:head]
        if mode == "files_with_matches":
            shown.insert(0, f"Found {hits} file{'s' if hits != 1 else ''}")
        answer = "\n".join(shown)
        if len(answer) > MAX_OUTPUT:
            answer = answer[:MAX_OUTPUT] + f"\n\n... [{len(answer) - MAX_OUTPUT} characters truncated] ..."
        return ToolOutput(answer + note, extra={"mode": mode, "numFiles": hits})


def _cut(line: str) -> str:
    if len(line) <= MAX_COLUMNS:
        return line
    return f"{line[:MAX_COLUMNS]} [... {len(line) - MAX_COLUMNS} more characters]"


def _rel(path: Path, base: Path) -> str:
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return path.name


def _search(
    ctx: ToolContext, entry: Entry, regex: LinePattern, keep: int, *, first_only: bool = False
) -> tuple[int, list[tuple[int, str]]]:
    """How many lines of one file match (1 at the first with `first_only`), and the first `keep` of them, cut
    (`_cut`): no more is held, whatever the file holds (before, every matching line of a file of short lines was,
    a hundred times the file's size); a file that is too big, binary, unreadable or no longer inside is skipped."""
    ctx.checkpoint()
    try:
        if os.stat(entry.real).st_size > MAX_FILE_BYTES:
            return 0, []
        data = ctx.read_bytes(entry.real, limit=MAX_FILE_BYTES + 1)
    except (ToolTimedOut, ToolCancelled):
        raise
    except (OSError, ToolError):
        return 0, []
    if len(data) > MAX_FILE_BYTES or b"\x00" in data[:8192]:
        return 0, []
    count = 0
    found: list[tuple[int, str]] = []
    for number, line in regex.matching_lines(data.decode("utf-8", errors="replace")):
        if count % CHECK_EVERY == 0:
            ctx.checkpoint()
        count += 1
        if len(found) < keep:
            found.append((number, _cut(line.removesuffix("\r"))))
        elif first_only:
            break
    return count, found
