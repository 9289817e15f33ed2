"""Reading a session store on the command line: `list`, `chain`, `check`, `search` with `--store`; `pull`.

A store session is read by writing it, as the Agent SDK does before a store-backed resume, into
a temporary projects folder and running the file readers on that (`storage.store_materialize`),
so listings, chains, diagnostics and search hits are exactly what they are for local files. The
readers open the store read-only; `pull` writes a store session into the local projects folder
so `claude --resume <id>` (or `session-lsp chain <id>`) continues it locally. Paths in the
readers' output are relative to a projects folder: `<project_key>/<id>.jsonl`. Writing to a
store (`fork --store`, `turn --store`, `push`) is in `server.commands.store_write`.

psycopg is imported only when a store is opened.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from server.commands.common import CommandError, add_projects_dir, print_json, projects_dir, store_url
from storage.terminaltext import one_line

STORE_HELP = "read sessions from a session store (postgresql://...) instead of a projects folder; read-only"


def add_store_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", type=store_url, metavar="URL", default=None, help=STORE_HELP)
    parser.add_argument("--store-schema", default="session_store", help="the store's PostgreSQL schema")


def add_store_session_args(p: argparse.ArgumentParser) -> None:
    """The arguments of a command on one session of a store and its local copy (`pull`, `push`)."""
    p.add_argument("session", help="session id")
    p.add_argument("--store", type=store_url, metavar="URL", required=True, help="the session store (postgresql://...)")
    p.add_argument("--store-schema", default="session_store", help="the store's PostgreSQL schema")
    p.add_argument("--cwd", default=None, help="the session's working directory, when the id is in several projects")
    add_projects_dir(p)
    p.add_argument("--json", action="store_true", help="print JSON")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("pull", help="copy a session from a session store into the local projects folder")
    add_store_session_args(p)
    p.set_defaults(func=cmd_pull)


def open_store(args: argparse.Namespace, *, read_only: bool = True) -> Any:
    url = args.store
    if not url.startswith(("postgresql://", "postgres://")):
        raise CommandError(f"unsupported store {url!r}: give a postgresql:// URL")
    from storage.pgstore import PostgresSessionStore

    try:
        return PostgresSessionStore(url, schema=args.store_schema, read_only=read_only, max_size=2)
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise CommandError(f"the PostgreSQL store needs psycopg: pip install 'session-lsp[pg]' ({exc})") from exc
    except ValueError as exc:
        raise CommandError(str(exc)) from exc


def run(coro: Any) -> Any:
    """Run a store coroutine. Our errors (`storage.errors`: an unreachable store, a missing
    session...) go up as they are, to the one mapping to exit statuses; a bad key is a command error."""
    import asyncio

    from storage.errors import SessionLspError

    try:
        return asyncio.run(coro)
    except SessionLspError:
        raise
    except ValueError as exc:
        raise CommandError(str(exc)) from exc


def project_key(cwd: str) -> str:
    from storage.paths import project_folder_name, resolve_cwd

    return project_folder_name(resolve_cwd(cwd))


@contextlib.contextmanager
def no_count_cache() -> Iterator[None]:
    """Keep temporary files out of the message-count cache."""
    old = os.environ.get("SESSION_LSP_NO_CACHE")
    os.environ["SESSION_LSP_NO_CACHE"] = "1"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("SESSION_LSP_NO_CACHE", None)
        else:
            os.environ["SESSION_LSP_NO_CACHE"] = old


def _relative(path: Path | str, root: Path) -> str:
    return str(Path(path).relative_to(root))


@contextlib.contextmanager
def materialised(args: argparse.Namespace) -> Iterator[Path]:
    """A temporary projects folder holding the store's sessions (those of `--cwd`'s project when
    given), written as the SDK writes them; caches stay off while it exists. A session whose key
    no file can have (an unsafe or overlong name) is left out, named on stderr."""
    import tempfile

    store = open_store(args)
    keys = [project_key(args.cwd)] if args.cwd else None
    with tempfile.TemporaryDirectory(prefix="slsp-store-") as tmp, no_count_cache():
        root = Path(tmp).resolve()
        run(_materialise_projects(store, keys, root))
        yield root


async def _materialise_projects(store: Any, keys: list[str] | None, root: Path) -> None:
    from storage.store_materialize import write_session

    try:
        for key in keys if keys is not None else await store.list_project_keys():
            for session in await store.load_project(key):
                try:
                    path = write_session(root, session, scratch=True)
                except ValueError as exc:  # a key no file can have: this session only is left out
                    shown = f"{key!r}/{session.session_id!r} skipped: {exc}"
                    print(f"session-lsp: store session {one_line(shown)}", file=sys.stderr)
                    continue
                mtime = session.mtime / 1000
                os.utime(path, (mtime, mtime))
    finally:
        await store.close()


def cmd_list_store(args: argparse.Namespace) -> int:

    from server.commands.read import print_sessions
    from storage.sessions import list_sessions

    with materialised(args) as root:
        sessions = list_sessions(root)
        if args.json:
            out = []
            for s in sessions:
                item = s.to_json()
                item["path"] = _relative(s.path, root)
                item["projectDir"] = _relative(s.project_dir, root)
                for sub in item["subagents"]:
                    sub["path"] = _relative(sub["path"], root)
                out.append(item)
            print_json(out)
            return 0
        print_sessions(sessions)
    return 0


async def locate_session(store: Any, args: argparse.Namespace) -> tuple[str, str]:
    """(project key, session id) of the session the arguments name."""
    if args.cont:
        key = project_key(args.cwd or os.getcwd())
        listed = sorted(await store.list_sessions(key), key=lambda s: s["mtime"], reverse=True)
        for cand in listed:
            entries = await store.load({"project_key": key, "session_id": cand["session_id"]})
            if entries and not (isinstance(entries[0], dict) and entries[0].get("isSidechain") is True):
                return key, cand["session_id"]
        raise CommandError(f"no session of {args.cwd or os.getcwd()} in the store")
    if not args.session:
        raise CommandError("give a session id or --continue")
    if args.cwd:
        return project_key(args.cwd), args.session
    keys = await store.find_session(args.session)
    if not keys:
        raise CommandError(f"no session {args.session} in the store")
    if len(keys) > 1:
        raise CommandError(f"session {args.session} is in {len(keys)} projects ({', '.join(keys)}): give --cwd")
    return keys[0], args.session


async def _load_named(store: Any, args: argparse.Namespace) -> Any:
    from storage.store_materialize import load_session

    try:
        key, sid = await locate_session(store, args)
        return await load_session(store, key, sid)
    finally:
        await store.close()


def cmd_chain_store(args: argparse.Namespace) -> int:
    import tempfile

    from server.commands.read import load_resumed, print_conversation
    from storage.store_materialize import write_session

    session = run(_load_named(open_store(args), args))
    with tempfile.TemporaryDirectory(prefix="slsp-store-") as tmp:
        root = Path(tmp)
        path = write_session(root, session, scratch=True)
        resumed = load_resumed(path, bare=args.bare)
        if args.json:
            out = resumed.to_json()
            out["path"] = _relative(path, root)
            print_json(out)
            return 0
        print_conversation(resumed)
    return 0


def cmd_pull(args: argparse.Namespace) -> int:
    from storage.store_materialize import LocalFileExists, write_session

    args.cont = False
    session = run(_load_named(open_store(args), args))
    root = projects_dir(args, must_exist=False)
    try:
        path = write_session(root, session)
    except (LocalFileExists, ValueError) as exc:
        raise CommandError(str(exc)) from exc
    files = [path, *sorted(p for p in (path.parent / session.session_id).rglob("*") if p.is_file())]
    if args.json:
        print_json({"sessionId": session.session_id, "path": str(path), "files": [str(f) for f in files]})
    else:
        print(f"{one_line(path)}  ({len(session.entries)} entries, {len(session.subkeys)} subagent file(s))")
        print(f"resume it with: claude --resume {one_line(session.session_id)}  (from its working directory)")
    return 0


def cmd_check_store(args: argparse.Namespace) -> int:
    """`check --store`: the diagnostics of every store session, as `check` gives them for a folder."""
    from dataclasses import replace

    from server.commands.check import emit
    from server.index.persisted import check_folder_indexed

    if args.paths:
        raise CommandError("check --store checks the store's sessions: give no paths (--cwd for one project)")
    with materialised(args) as root:
        diags, n_files = check_folder_indexed(root, args.jobs or None)
        diags = [
            replace(
                d,
                path=Path(_relative(d.path, root)),
                related=[replace(r, path=Path(_relative(r.path, root))) for r in d.related],
            )
            for d in diags
        ]
    return emit(diags, n_files, as_json=args.json)


def cmd_search_store(args: argparse.Namespace) -> int:
    """`search --store`: full-text search over the store's sessions, in an index that lives as
    long as the command (the store is not indexed in the cache folder)."""
    from dataclasses import replace

    from server.commands.search import print_hits
    from storage.search import SearchIndex

    with materialised(args) as root:
        index = SearchIndex.open(None)
        try:
            index.update(root)
            hits = index.search(" ".join(args.query), max(1, args.limit), projects_dir=root)
        finally:
            index.close()
        hits = [replace(h, path=_relative(h.path, root)) for h in hits]
    return print_hits(hits, args)
