"""The `session-lsp` command line: one subcommand module per family of commands."""

from __future__ import annotations

import argparse
import importlib
import sys

from server.commands.common import exit_status, fail
from storage.errors import SessionLspError

COMMAND_MODULES = (
    "server.commands.read",
    "server.commands.write",
    "server.commands.check",
    "server.commands.serve",
    "server.commands.turn",
    "server.commands.usage",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="session-lsp", description="Claude Code sessions: list, inspect, resume, fork, check, serve."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except SessionLspError as exc:
        fail(str(exc), exit_status(exc))
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt as exc:
        return exit_status(exc)


if __name__ == "__main__":
    sys.exit(main())
