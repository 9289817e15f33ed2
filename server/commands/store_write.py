"""Writing store sessions on the command line: `fork --store`, `turn --store` and `push`.

- `fork ID --store URL` forks a store session into the store (a new session id under the same
  project); `--into local` writes the fork into the local projects folder instead
  (`storage.store_fork`).
- `turn --store URL --resume ID PROMPT` runs an agent turn on a store session and appends what
  it wrote to the store (`server.agent.store_turn`); the local copy stays in the projects folder.
- `push ID --store URL` sends the rows a local copy holds beyond the store's (`storage.store_sync`),
  e.g. after a turn whose push failed; pushing again adds nothing.

These open the store for writing (the role needs INSERT on the schema).
"""

from __future__ import annotations

import argparse
from typing import Any

from server.commands.common import CommandError, print_json, projects_dir
from server.commands.store import add_store_session_args, locate_session, open_store, run
from storage.terminaltext import one_line


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("push", help="append a local copy's new rows to its session in a session store")
    add_store_session_args(p)
    p.set_defaults(func=cmd_push)


async def _locate(
    store: Any, args: argparse.Namespace, session: str | None, *, cwd_names_project: bool = True
) -> tuple[str, str]:
    """(project key, session id) of the store session the arguments name; the store stays open.
    Without `cwd_names_project` an id is looked up in every project (`--cwd` is then only where
    a turn's tools work, which need not be where the session was recorded)."""
    cont = bool(getattr(args, "cont", False))
    cwd = args.cwd if cwd_names_project or cont else None
    return await locate_session(store, argparse.Namespace(session=session, cont=cont, cwd=cwd))


async def _fork(store: Any, args: argparse.Namespace) -> Any:
    from storage.store_fork import fork_store_session

    try:
        key, sid = await _locate(store, args, args.session)
        local = projects_dir(args, must_exist=False) if args.into == "local" else None
        return await fork_store_session(
            store, key, sid, into=args.into, projects_dir=local, at_uuid=args.at, title=args.title
        )
    finally:
        await store.close()


def cmd_fork_store(args: argparse.Namespace) -> int:
    fork = run(_fork(open_store(args, read_only=args.into == "local"), args))
    if args.json:
        print_json({"sessionId": fork.session_id, "path": fork.path, "into": fork.into, "rows": fork.rows})
    else:
        print(f"{one_line(fork.session_id)}\t{one_line(fork.path)}")
    return 0


async def _located(
    store: Any, args: argparse.Namespace, session: str | None, *, cwd_names_project: bool = True
) -> tuple[str, str]:
    try:
        return await _locate(store, args, session, cwd_names_project=cwd_names_project)
    finally:
        await store.close()


def cmd_push(args: argparse.Namespace) -> int:
    from server.agent.store_turn import push

    store = open_store(args, read_only=False)
    key, sid = run(_located(store, args, args.session))
    root = projects_dir(args)
    taken = push(store, root, key, sid)
    if args.json:
        print_json({"sessionId": sid, "projectKey": key, "pushed": taken})
    else:
        print(f"{one_line(sid)}: {taken} row(s) appended to the store")
    return 0


def turn_on_store(args: argparse.Namespace, request: Any, **turn_options: Any) -> Any:
    """The store side of `turn --store`: which session, then `run_store_turn` (a `StoreTurn`)."""
    from server.agent.store_turn import run_store_turn

    if args.new or args.fork:
        raise CommandError("turn --store continues a store session: give --resume ID (or --continue), not --new/--fork")
    if not (args.resume or args.cont):
        raise CommandError("turn --store needs --resume ID or --continue")
    store = open_store(args, read_only=False)
    key, sid = run(_located(store, args, args.resume, cwd_names_project=False))
    return run_store_turn(store, key, sid, request, **turn_options)
