"""`check`: diagnostics of transcripts (given files and folders, or the whole projects folder).

A file is checked whatever its name; a folder stands for every transcript under it (session and
agent files, at any depth); the projects folder itself is checked as a whole, on several processes.
Entries that are not regular files (FIFOs, symlink loops) are skipped and named once on stderr.
Exit status: 0 clean, 1 when an error was found, 2 for a usage error or a crash (one line).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

from server.commands.common import CommandError, add_projects_dir, print_json, projects_dir
from server.commands.store import add_store_option
from server.index import Diagnostic, ProjectIndex
from server.index.rawsearch import find_row
from server.index.store import norm, session_key, tracked_kind
from storage.errors import SessionLspError
from storage.fileopen import why_not_regular
from storage.terminaltext import one_line, unguarded

PROGRESS_MIN_FILES = 20


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("check", help="diagnose transcripts: broken links, bad lines, cycles, ...")
    p.add_argument(
        "paths", nargs="*", type=Path,
        help="transcript files (any name) or folders (every transcript under them); default: the projects folder",
    )  # fmt: skip
    add_projects_dir(p)
    p.add_argument("--json", action="store_true", help="print a JSON list of diagnostics")
    add_store_option(p)
    p.add_argument("--cwd", default=None, help="with --store: only the sessions of this working directory")
    p.add_argument("-j", "--jobs", type=int, default=0, help="worker processes for a whole folder (default: CPUs)")
    p.set_defaults(func=cmd_check)


class Progress:
    """A one-line progress bar on stderr, only when it is a terminal (its `\\r` and counts written as they are:
    they hold no data)."""

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
        err = unguarded(sys.stderr)
        err.write(f"\rchecking [{'#' * filled}{'.' * (width - filled)}] {done}/{total} files")
        if done == total:
            err.write("\r" + " " * (width + 40) + "\r")
        err.flush()


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
            out.update(norm(s) for s in sub_root.rglob("agent-*.jsonl") if tracked_kind(s) == "subagent")
    return sorted(out)


def _named(raw: Path, skipped: dict[Path, str]) -> list[Path]:
    """The transcripts an argument names: the file itself, or every transcript under a folder."""
    p = norm(raw.expanduser())
    if p.is_dir():
        found = sorted(
            norm(f) for f in p.rglob("*.jsonl") if tracked_kind(f) in ("session", "subagent", "legacy-agent")
        )
        regular = [f for f in found if why_not_regular(f) is None]
        skipped.update((f, why_not_regular(f) or "") for f in found if f not in regular)
        if not found:
            raise CommandError(f"no transcripts under {raw} (a folder stands for the *.jsonl transcripts under it)")
        return regular
    why = why_not_regular(p)
    if why is not None and not os.path.lexists(p):
        raise CommandError(f"no such file: {raw}")
    if why is not None:
        raise CommandError(f"{raw}: {why}, not a transcript file")
    return [p]


def named_projects(args: argparse.Namespace) -> list[Path] | None:
    """The project folders of the projects folder that the arguments name, when they name only such folders (none, or
    the projects folder itself: then []): these are checked through the persistent index, as the whole folder is."""
    whole = norm(projects_dir(args, must_exist=False))
    named = [norm(p.expanduser()) for p in args.paths]
    if named == [whole]:
        return []
    if all(p.parent == whole and p.is_dir() and _holds_transcripts(p) for p in named):
        return sorted(set(named))
    return None


def _holds_transcripts(folder: Path) -> bool:
    """A transcript lies somewhere under `folder` (else naming it is an error, told when its files are read)."""
    return any(tracked_kind(f) in ("session", "subagent", "legacy-agent") for f in folder.rglob("*.jsonl"))


def build_index(args: argparse.Namespace) -> tuple[ProjectIndex, list[Path]]:
    """The index of the given paths (files, or folders that are not project folders: see `checked_indexed`), and
    the transcripts they name."""
    progress = Progress(not args.json)
    skipped: dict[Path, str] = {}
    paths = sorted({p for raw in args.paths for p in _named(raw, skipped)})
    root = projects_dir(args, must_exist=False) if args.projects_dir else paths[0].parent.parent
    idx = ProjectIndex(root)
    idx.skipped.update(skipped)
    idx.named.update(paths)
    idx.scan(progress, paths=_context_files(paths))
    folders = sorted({session_key(p)[0] for p in paths})
    idx.fallback_lookup = lambda uuid: find_row(_others(idx, folders), uuid)
    return idx, paths


def _others(idx: ProjectIndex, folders: list[Path]) -> list[Path]:
    """Transcripts of the given project folders that are not indexed (links stay in their folder)."""
    out = []
    for folder in folders:
        for p in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
            if tracked_kind(p) and p not in idx.files and why_not_regular(p) is None:
                out.append(p)
    return out


def cmd_check(args: argparse.Namespace) -> int:
    try:
        return _check(args)
    except (SessionLspError, BrokenPipeError, KeyboardInterrupt):
        raise
    except Exception as exc:  # a crash is not "errors found": status 2 and one line
        raise CommandError(f"check failed: {type(exc).__name__}: {exc}") from exc


def _check(args: argparse.Namespace) -> int:
    if args.store:
        from server.commands.store import cmd_check_store

        return cmd_check_store(args)
    if args.cwd:
        raise CommandError("--cwd narrows a --store check; name files or folders to check part of a folder")
    projects = named_projects(args)
    found = checked_indexed(args, projects) if projects is not None else None
    if found is None:
        idx, only = build_index(args)
        skipped = idx.skipped
        n_files = len(only)
        diags = sorted((d for p in only for d in idx.diagnostics(p, ranges=False)), key=Diagnostic.sort_key)
    else:
        diags, n_files, skipped = found
    report_skipped(skipped)
    return emit(diags, n_files, as_json=args.json)


def checked_indexed(
    args: argparse.Namespace, projects: list[Path]
) -> tuple[list[Diagnostic], int, dict[Path, str]] | None:
    """The diagnostics of the whole projects folder (`projects` empty) or of some of its project folders, their
    number of files and the entries skipped, through the persistent index (only what changed since is read, on
    several processes); None for project folders when there is no index database (their files are read here)."""
    from server.index.persisted import check_folder_indexed, check_projects_indexed

    skipped: dict[Path, str] = {}
    progress = Progress(not args.json)
    if not projects:
        diags, n_files = check_folder_indexed(projects_dir(args), args.jobs or None, progress, skipped=skipped)
        return diags, n_files, skipped
    found = check_projects_indexed(projects_dir(args), projects, args.jobs or None, progress, skipped=skipped)
    return None if found is None else (*found, skipped)


def emit(diags: list[Diagnostic], n_files: int, *, as_json: bool) -> int:
    """Print the diagnostics (JSON or a listing); the exit status: 1 when one is an error."""
    if as_json:
        print_json([d.to_json() for d in diags])
    else:
        print_listing(diags, n_files)
    return 1 if any(d.severity == "error" for d in diags) else 0


def report_skipped(skipped: dict[Path, str]) -> None:
    """One line on stderr for the entries that were not read."""
    if skipped:
        listed = "; ".join(f"{one_line(p)} ({one_line(why)})" for p, why in sorted(skipped.items()))
        print(
            f"session-lsp: skipped {len(skipped)} entr{'y' if len(skipped) == 1 else 'ies'} that "
            f"{'is' if len(skipped) == 1 else 'are'} not a regular file: {listed}",
            file=sys.stderr,
        )


def print_listing(diags: list[Diagnostic], n_files: int) -> None:
    out = sys.stdout
    for d in diags:
        out.write(f"{one_line(d.path)}:{d.line + 1}: {d.severity}: {one_line(d.message)} [{d.code}]\n")
        for r in d.related:
            out.write(f"    {one_line(r.path)}:{r.line + 1}: note: {one_line(r.message)}\n")
    counts: Counter[str] = Counter()
    for d in diags:
        counts[d.severity] += 1 + d.more  # one folded in (`diagnostics.bounded`) stands for more
    names = {"error": "error(s)", "warning": "warning(s)", "information": "information", "hint": "hint(s)"}
    parts = [f"{counts[s]} {name}" for s, name in names.items()]
    out.write(f"{n_files} file(s) checked: {', '.join(parts)}\n")
    out.flush()
