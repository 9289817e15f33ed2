"""`search`: full-text search over every prompt, reply and tool result (`storage.search`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from server.commands.common import CommandError, add_projects_dir, print_json, projects_dir
from server.commands.store import add_store_option
from storage.terminaltext import one_line

if TYPE_CHECKING:
    from storage.search import Hit


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("search", help="find a prompt, reply or tool result in every session")
    p.add_argument("query", nargs="+", help="words that must all appear (the last may be the start of a word)")
    add_projects_dir(p)
    add_store_option(p)
    p.add_argument("--cwd", default=None, help="with --store: only the sessions of this working directory")
    p.add_argument("--limit", type=int, default=50, help="most hits shown (default 50)")
    p.add_argument("--json", action="store_true", help="print JSON: [{sessionId, path, line, uuid, kind, snippet}]")
    p.set_defaults(func=cmd_search)


def cmd_search(args: argparse.Namespace) -> int:
    if args.store:
        from server.commands.store import cmd_search_store

        return cmd_search_store(args)
    from storage.search import SearchIndex

    if args.cwd:
        raise CommandError("--cwd narrows a --store search; a folder search takes every session")
    root = projects_dir(args)
    index = SearchIndex.open()
    try:
        index.update(root)
        hits = index.search(" ".join(args.query), max(1, args.limit), projects_dir=root)
    finally:
        index.close()
    return print_hits(hits, args)


def print_hits(hits: list[Hit], args: argparse.Namespace) -> int:
    if args.json:
        print_json([h.to_json() for h in hits])
        return 0
    for h in hits:
        print(f"{one_line(h.path)}:{h.line + 1}: [{one_line(h.kind)}] {one_line(' '.join(h.snippet.split()))}")
    if not hits:
        print(f"no match for '{one_line(' '.join(args.query))}'")
    return 0
