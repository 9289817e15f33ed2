"""`fork`, `rename` and `tag`: writing sessions as the CLI does (never into a live session)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from server.commands.common import CommandError, add_projects_dir, print_json, projects_dir, store_url
from storage.access import Access
from storage.fork import fork_session
from storage.lookup import resolve_session
from storage.metadata import rename_session, tag_session
from storage.terminaltext import one_line
from storage.writequeue import TornTail


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("fork", help="fork a session into a new one the CLI can resume")
    p.add_argument("session", help="session id, title or FILE.jsonl")
    p.add_argument(
        "--at",
        metavar="UUID",
        help="fork at this message (fresh uuids, forkedFrom); "
        "default: the whole chain with the same uuids, as --fork-session",
    )
    p.add_argument("--title", help="custom title of the new session")
    p.add_argument("--cwd", default=None, help="working directory for title lookups")
    add_projects_dir(p)
    p.add_argument(
        "--store",
        type=store_url,
        metavar="URL",
        default=None,
        help="fork a session of this session store (postgresql://...)",
    )
    p.add_argument("--store-schema", default="session_store", help="the store's PostgreSQL schema")
    p.add_argument(
        "--into",
        choices=("store", "local"),
        default=None,
        help="with --store: where the fork goes, the store (default) or the local projects folder",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_fork)

    p = sub.add_parser("rename", help="set a session's custom title (as /rename)")
    p.add_argument("session", help="session id, title or FILE.jsonl")
    p.add_argument("title")
    p.add_argument("--cwd", default=None)
    add_projects_dir(p)
    p.set_defaults(func=cmd_rename)

    p = sub.add_parser("tag", help="set a session's tag (as /tag)")
    p.add_argument("session", help="session id, title or FILE.jsonl")
    p.add_argument("tag")
    p.add_argument("--cwd", default=None)
    add_projects_dir(p)
    p.set_defaults(func=cmd_tag)


def _source(args: argparse.Namespace, access: Access) -> Path:
    """The session named on the command line, decided by `storage.access` for `access`."""
    return resolve_session(projects_dir(args), args.session, args.cwd, access)


def _report_torn(torn: TornTail | None) -> None:
    if torn is not None:
        print(
            f"session-lsp: {one_line(torn.path)} ended in a torn line at byte {torn.offset}; sealed it with a newline",
            file=sys.stderr,
        )


def cmd_fork(args: argparse.Namespace) -> int:
    if args.store:
        from server.commands.store_write import cmd_fork_store

        args.into = args.into or "store"
        return cmd_fork_store(args)
    if args.into is not None:
        raise CommandError("--into goes with --store (a local session forks into its own folder)")
    sid, path = fork_session(_source(args, "read"), projects_dir(args), at_uuid=args.at, title=args.title)
    if args.json:
        print_json({"sessionId": sid, "path": str(path)})
    else:
        print(f"{one_line(sid)}\t{one_line(path)}")
    return 0


def _append(args: argparse.Namespace, fn: Callable[..., TornTail | None], value: str) -> int:
    # admitted in the config home of the projects folder as given, where a turn takes its lock and the CLI keeps its
    # registry: not beside the session file's real folder, elsewhere when the projects folder is a link
    _report_torn(fn(_source(args, "write"), value, config_dir=projects_dir(args).parent))
    return 0


def cmd_rename(args: argparse.Namespace) -> int:
    return _append(args, rename_session, args.title)


def cmd_tag(args: argparse.Namespace) -> int:
    return _append(args, tag_session, args.tag)
