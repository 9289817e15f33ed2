"""`check`: diagnostics of transcripts (given files, or the whole projects folder)."""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

from server.commands.common import CommandError, add_projects_dir, print_json, projects_dir
from server.index import Diagnostic, ProjectIndex
from server.index.rawsearch import find_row
from server.index.store import norm, session_key, tracked_kind

PROGRESS_MIN_FILES = 20


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("check", help="diagnose transcripts: broken links, bad lines, cycles, ...")
    p.add_argument("paths", nargs="*", type=Path, help="transcript files (default: the whole projects folder)")
    add_projects_dir(p)
    p.add_argument("--json", action="store_true", help="print a JSON list of diagnostics")
    p.add_argument("-j", "--jobs", type=int, default=0, help="worker processes for a whole folder (default: CPUs)")
    p.set_defaults(func=cmd_check)


class Progress:
    """A one-line progress bar on stderr, only when it is a terminal."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.last = 0.0

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total < PROGRESS_MIN_FILES:
            return
        now = time.monotonic()
        if done < total and now - self.last < 0.1:
            return
        self.last = now
        width = 30
        filled = width * done // max(total, 1)
        sys.stderr.write(f"\rchecking [{'#' * filled}{'.' * (width - filled)}] {done}/{total} files")
        if done == total:
            sys.stderr.write("\r" + " " * (width + 40) + "\r")
        sys.stderr.flush()


def _context_files(paths: list[Path]) -> list[Path]:
    """The given files and the other files of their sessions (subagents resolve against them)."""
    out = set(paths)
    for p in paths:
        project, sid = session_key(p)
        main = project / f"{sid}.jsonl"
        if main.is_file():
            out.add(main)
        sub_root = project / sid / "subagents"
        if sub_root.is_dir():
            out.update(norm(s) for s in sub_root.rglob("agent-*.jsonl"))
    return sorted(out)


def build_index(args: argparse.Namespace) -> tuple[ProjectIndex | None, list[Path] | None]:
    """The index for the given paths; (None, None) for the whole folder (see `check_folder`)."""
    progress = Progress(not args.json)
    if not args.paths:
        return None, None
    paths = []
    for raw in args.paths:
        p = norm(raw.expanduser())
        if not p.is_file():
            raise CommandError(f"no such file: {raw}")
        paths.append(p)
    root = projects_dir(args, must_exist=False) if args.projects_dir else paths[0].parent.parent
    idx = ProjectIndex(root)
    idx.scan(progress, paths=_context_files(paths))
    idx.fallback_lookup = lambda uuid: find_row(_others(idx), uuid)
    return idx, paths


def _others(idx: ProjectIndex) -> list[Path]:
    if not idx.projects_dir.is_dir():
        return []
    return [p for p in idx.projects_dir.glob("*/*.jsonl") if tracked_kind(p) and p not in idx.files]


def cmd_check(args: argparse.Namespace) -> int:
    idx, only = build_index(args)
    if idx is None:
        from server.index.persisted import check_folder_indexed

        diags, n_files = check_folder_indexed(projects_dir(args), args.jobs or None, Progress(not args.json))
    elif only is None:
        diags, n_files = idx.all_diagnostics(), len(idx.files)
    else:
        n_files = len(only)
        diags = sorted((d for p in only for d in idx.diagnostics(p, ranges=False)), key=Diagnostic.sort_key)
    if args.json:
        print_json([d.to_json() for d in diags])
    else:
        print_listing(diags, n_files)
    return 1 if any(d.severity == "error" for d in diags) else 0


def print_listing(diags: list[Diagnostic], n_files: int) -> None:
    out = sys.stdout
    for d in diags:
        out.write(f"{d.path}:{d.line + 1}: {d.severity}: {d.message} [{d.code}]\n")
        for r in d.related:
            out.write(f"    {r.path}:{r.line + 1}: note: {r.message}\n")
    counts = Counter(d.severity for d in diags)
    names = {"error": "error(s)", "warning": "warning(s)", "information": "information", "hint": "hint(s)"}
    parts = [f"{counts[s]} {name}" for s, name in names.items()]
    out.write(f"{n_files} file(s) checked: {', '.join(parts)}\n")
    out.flush()
