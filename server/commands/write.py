"""`fork`, `rename` and `tag`: writing sessions as the CLI does (never into a live session)."""

from __future__ import annotations

import argparse
import sys

from server.commands.common import CommandError, add_projects_dir, print_json, projects_dir
from storage.fork import ForkError, fork_session
from storage.livesession import SessionInUse
from storage.lookup import SessionNotFound, resolve_session
from storage.metadata import rename_session, tag_session
from storage.writequeue import TornTail


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("fork", help="fork a session into a new one the CLI can resume")
    p.add_argument("session", help="session id, title or FILE.jsonl")
    p.add_argument("--at", metavar="UUID", help="fork at this message (fresh uuids, forkedFrom); "
                   "default: the whole chain with the same uuids, as --fork-session")
    p.add_argument("--title", help="custom title of the new session")
    p.add_argument("--cwd", default=None, help="working directory for title lookups")
    add_projects_dir(p)
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


def _source(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    root = projects_dir(args, must_exist=not str(args.session).endswith(".jsonl"))
    try:
        return resolve_session(root, args.session, args.cwd)
    except SessionNotFound as exc:
        raise CommandError(str(exc)) from exc


def _report_torn(torn: TornTail | None) -> None:
    if torn is not None:
        print(f"session-lsp: {torn.path} ended in a torn line at byte {torn.offset}; sealed it with a newline",
              file=sys.stderr)


def cmd_fork(args: argparse.Namespace) -> int:
    source = _source(args)
    try:
        sid, path = fork_session(source, at_uuid=args.at, title=args.title)
    except (ForkError, FileExistsError) as exc:
        raise CommandError(str(exc)) from exc
    if args.json:
        print_json({"sessionId": sid, "path": str(path)})
    else:
        print(f"{sid}\t{path}")
    return 0


def _append(args: argparse.Namespace, fn, value: str) -> int:  # type: ignore[no-untyped-def]
    source = _source(args)
    try:
        _report_torn(fn(source, value))
    except SessionInUse as exc:
        raise CommandError(str(exc)) from exc
    return 0


def cmd_rename(args: argparse.Namespace) -> int:
    return _append(args, rename_session, args.title)


def cmd_tag(args: argparse.Namespace) -> int:
    return _append(args, tag_session, args.tag)
