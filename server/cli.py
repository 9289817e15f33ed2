"""The `session-lsp` command line: one subcommand module per family of commands, imported only when it runs.

Start-up cost is the imports: `turn` pulls in the agent (and, for the `anthropic` provider, the SDK), `serve`
pulls in pygls and watchdog. The top-level parser therefore knows the subcommands only by name and help line;
the module that defines a subcommand's options and handler is imported when that subcommand is chosen.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from server.commands.common import exit_status, fail
from storage.errors import SessionLspError

COMMANDS: dict[str, tuple[str, str]] = {
    "list": ("server.commands.read", "list sessions, newest first"),
    "chain": ("server.commands.read", "the conversation that resume rebuilds"),
    "overview": ("server.commands.read", "sessions with their chains and problems (the main job)"),
    "check": ("server.commands.check", "diagnose transcripts: broken links, bad lines, cycles, ..."),
    "fork": ("server.commands.write", "fork a session into a new one the CLI can resume"),
    "rename": ("server.commands.write", "set a session's custom title (as /rename)"),
    "tag": ("server.commands.write", "set a session's tag (as /tag)"),
    "serve": ("server.commands.serve", "run the language server"),
    "turn": ("server.commands.turn", "run one turn (prompt -> reply, with tools), recorded for `claude --resume`"),
    "pull": ("server.commands.store", "materialise a store session into the projects folder (resume locally)"),
    "push": ("server.commands.store_write", "append a local copy's new rows to its session in a session store"),
    "usage": ("server.commands.usage", "tokens and cost by session, project, model or day"),
    "search": ("server.commands.search", "find a prompt, reply or tool result in every session"),
}
"""Subcommand -> (the module whose `register(sub)` defines it, its line in `session-lsp --help`)."""


class VersionAction(argparse.Action):
    """`--version`: print the package version and exit (the metadata is read only when asked)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from server.version import version

        sys.stdout.write(f"session-lsp {version()}\n")
        parser.exit()


def chosen_command(argv: list[str]) -> str | None:
    """The subcommand named in `argv` (the top level has no options that take a value), if any."""
    for token in argv:
        if token == "--":
            return None
        if not token.startswith("-"):
            return token if token in COMMANDS else None
    return None


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser, with the full options of the subcommand `argv` names; the others by name and help only."""
    parser = argparse.ArgumentParser(
        prog="session-lsp", description="Claude Code sessions: list, inspect, resume, fork, check, serve."
    )
    parser.add_argument("--version", action=VersionAction)
    sub = parser.add_subparsers(dest="command", required=True)
    chosen = chosen_command(sys.argv[1:] if argv is None else argv)
    module_name = COMMANDS[chosen][0] if chosen else None
    registered = False
    for name, (module, help_line) in COMMANDS.items():
        if module != module_name:
            sub.add_parser(name, help=help_line)
        elif not registered:
            importlib.import_module(module).register(sub)
            registered = True
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command `argv` names (the program's arguments when None). Everything it prints passes through
    `storage.terminaltext` (stdout, but for `serve`'s protocol, and stderr); for the program itself that holds
    until it exits (a traceback too), for an in-process caller until `main` returns."""
    from storage.terminaltext import guard_output

    restore = guard_output(stdout=chosen_command(sys.argv[1:] if argv is None else argv) != "serve")
    try:
        return _run(argv)
    finally:
        if argv is not None:
            restore()


def _run(argv: list[str] | None) -> int:
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.error(f"unknown command {args.command!r}")
    if argv is None and args.command in ("serve", "turn"):
        # the program itself, which runs turns (not a caller's in-process `main([...])`: becoming a subreaper would
        # change where every orphan below that caller goes): what a Bash command's killed supervisor leaves comes
        # to this process, to be ended (`processes.sweep`)
        from server.subreaper import contain

        contain()
        # not dumpable from the start (`server/agent/tools/concealed.py`): the first index's workers, forked without
        # a new program, stay so, and a turn's Bash started while they read (a cold start) cannot read the
        # credentials from their `/proc/<pid>/environ` either, as it could before this process was concealed at its
        # first command
        from server.prctl import PR_SET_DUMPABLE, prctl

        prctl(PR_SET_DUMPABLE, 0)
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
