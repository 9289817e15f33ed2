"""`serve`: run the language server over stdio (default), TCP or WebSocket."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from server.commands.common import CommandError, add_projects_dir, store_url

if TYPE_CHECKING:
    from server.lsp.options import InitializationOptions
    from storage.store_source import StoreSource


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("serve", help="run the language server")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (default)")
    mode.add_argument(
        "--tcp",
        metavar="HOST:PORT",
        help="serve one editor on a loopback port; it must send initializationOptions.token (server/lsp/listen.py)",
    )
    p.add_argument("--token-file", type=Path, help="with --tcp: the token, read from this 0600 file (made if missing)")
    add_projects_dir(p)
    p.add_argument("--polling", action="store_true", help="poll the folder instead of OS events (network drives)")
    p.add_argument(
        "--store",
        type=store_url,
        metavar="URL",
        action="append",
        default=[],
        help="also serve the sessions of this session store (postgresql://...), read-only; repeatable",
    )
    p.add_argument("--store-schema", default="session_store", help="the stores' PostgreSQL schema")
    p.add_argument("--log-file", type=Path, help="write the log here (stdout is only protocol)")
    p.add_argument("-v", "--verbose", action="count", default=0, help="more logging")
    p.set_defaults(func=cmd_serve)


class EscapedLog(logging.Formatter):
    """Log lines with every control character of what they quote written out (`storage.terminaltext.escape`): a
    log file is read in a terminal too (`tail -f`), and a record's paths and names come from the projects folder.
    A traceback keeps its lines."""

    def format(self, record: logging.LogRecord) -> str:
        from storage.terminaltext import escape

        return escape(super().format(record))


def _private_log(path: Path) -> logging.Handler:
    """The log file, created 0600 (logs name sessions and paths), and made 0600 if it existed."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    os.fchmod(fd, 0o600)
    return logging.StreamHandler(os.fdopen(fd, "a", encoding="utf-8"))


def _host_port(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        raise CommandError(f"expected HOST:PORT, got {value!r}")
    return host.strip("[]"), int(port)


def _stores(urls: list[str], schema: str) -> tuple[StoreSource, ...]:
    """The stores of `--store`; their module is loaded only when one is named (not before the first answers)."""
    if not urls:
        return ()
    from storage.store_source import StoreSource, parse_store

    return tuple(StoreSource(parse_store(url, "--store").url, schema) for url in urls)


def cmd_serve(args: argparse.Namespace) -> int:
    level = logging.WARNING - 10 * min(args.verbose, 2)
    handlers: list[logging.Handler] = [
        _private_log(args.log_file) if args.log_file else logging.StreamHandler(sys.stderr)
    ]
    for handler in handlers:
        handler.setFormatter(EscapedLog("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=handlers)
    from storage.errors import InvalidArgument
    from storage.schemaname import check_schema

    try:
        schema = check_schema(args.store_schema, "--store-schema")
        stores = _stores(args.store, schema)
    except InvalidArgument as exc:
        raise CommandError(str(exc)) from exc

    def defaults() -> InitializationOptions:
        """The command line's choices as options (their module loads cattrs: not before it is needed)."""
        from server.lsp.options import InitializationOptions

        return InitializationOptions(projects_dir=args.projects_dir, polling=args.polling, stores=stores)

    if args.token_file is not None and not args.tcp:
        raise CommandError("--token-file goes with --tcp")
    if args.tcp:
        from server.lsp.listen import accept_editor, listen_address, server_token

        address = listen_address(*_host_port(args.tcp))
        token, told = server_token(args.token_file)
        editor = accept_editor(address, token, told)
        from server.lsp.server import server

        server.defaults = defaults()
        server.start_io(editor.reader, editor.writer)
        return 0
    from server.lsp.parentwatch import launch_ancestry

    launch_ancestry()  # the editor as it launched us: it may be gone before pygls handles `initialize`
    launch = [str(args.projects_dir) if args.projects_dir else None, args.polling, [s.url for s in stores], schema]
    # over stdio, a known `initialize` is answered before the server loads
    from server.lsp.early import EarlyInitialize

    early = EarlyInitialize.start(sys.stdin.buffer, sys.stdout.buffer, launch, defaults)
    from server.lsp.server import SessionProtocol, server

    server.defaults = defaults()
    assert isinstance(server.protocol, SessionProtocol)
    server.protocol.early = early
    server.start_io(early.stream)
    return 0
