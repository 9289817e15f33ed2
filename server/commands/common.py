"""Helpers shared by the subcommands: projects folder choice, errors, JSON output.

What they print for people passes through `storage.terminaltext` (see there): `server.cli.main` puts it in front of
stdout and stderr; a field shown on one line goes through `one_line` where its line is made."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

from storage.errors import InvalidArgument


def _example_projects() -> Path:
    """The bundled example projects folder: inside the installed package (a wheel ships it as
    `server/example_projects`), else in the checkout's `examples/projects`."""
    packaged = Path(__file__).resolve().parents[1] / "example_projects"
    return packaged if packaged.is_dir() else Path(__file__).resolve().parents[2] / "examples" / "projects"


EXAMPLE_PROJECTS = _example_projects()


class CommandError(InvalidArgument):
    """A wrong command line: printed as one line on stderr, exit status 2."""


EXIT_ERRORS_FOUND = 1
"""`check`: the files hold errors (and only that)."""
EXIT_REFUSED = 2
"""Any `SessionLspError` (a wrong argument, a path outside the projects folder, a session in use...)
and any crash: one line on stderr."""
EXIT_INTERRUPTED = 130


def exit_status(exc: BaseException) -> int:
    """The one mapping from errors to exit statuses."""
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    return EXIT_REFUSED


def store_url(value: str) -> str:
    """A `--store URL` of the command line, refused when it carries a password: every user of this machine can read
    a process's arguments (`ps`, /proc/PID/cmdline) while it runs."""
    from storage.store_source import SCHEMES, has_password, redact

    if value.startswith(SCHEMES) and has_password(value):  # another scheme is refused as such, later
        raise argparse.ArgumentTypeError(
            f"{redact(value)} carries a password, which every user of this machine can read in the process list: "
            "put it in PGPASSWORD or ~/.pgpass and give the URL without it"
        )
    return value


def add_projects_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--projects-dir",
        type=Path,
        default=None,
        help="projects folder (default: $CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects)",
    )


def projects_dir(args: argparse.Namespace, *, must_exist: bool = True) -> Path:
    from storage.paths import default_projects_dir

    chosen = args.projects_dir if args.projects_dir is not None else default_projects_dir()
    chosen = decodable_projects(Path(chosen).expanduser())
    if must_exist and not chosen.is_dir():
        raise CommandError(f"projects folder does not exist: {chosen}")
    return chosen


def decodable_projects(chosen: Path) -> Path:
    """`chosen`, a projects folder whose path (as given, absolute and real) is valid UTF-8; else a `CommandError`:
    every path below it would carry a lone surrogate, which the caches (SQLite, JSON) cannot hold (`list`, `usage`
    and `search` ended in a traceback, `overview` failed). `storage.paths.decodable` says why no session is there."""
    import os

    from storage.paths import decodable

    if not all(decodable(p) for p in (chosen, chosen.absolute(), os.path.realpath(chosen))):
        raise CommandError(f"projects folder {chosen} is not valid UTF-8: the CLI has no session there")
    return chosen


def print_json(value: Any) -> None:
    print_json_text(json_text(value))


def json_text(value: Any) -> bytes:
    """What `print_json` prints of `value`, without its final newline: indented, or compact when orjson cannot
    write it (a message nested past its 254 levels, an integer past 64 bits: `storage.jsonline.dumps_any_depth`)."""
    import orjson  # imported when output is written: `--help` and parsing stay light

    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2)
    except orjson.JSONEncodeError:
        from storage.jsonline import dumps_any_depth

        return dumps_any_depth(value)


def print_json_text(text: bytes) -> None:
    """JSON on stdout, its data exact and its bytes inert on a terminal (`storage.terminaltext.inert_json`)."""
    from storage.terminaltext import inert_json

    sys.stdout.buffer.write(inert_json(text) + b"\n")
    sys.stdout.flush()


def answered() -> None:
    """The command's answer is whole: when its output is a pipe, the pipe is let go (this process's descriptor 1 is
    put on `os.devnull`), so whoever reads it (an editor, `jq`) has the end now while the command finishes what is
    not part of the answer (storing what it read for the next run). A terminal or a file is left as it is."""
    import stat

    sys.stdout.flush()
    try:
        fd = sys.stdout.fileno()
        if fd != 1 or not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return
    except (OSError, ValueError, AttributeError):  # no descriptor (a caller's in-memory stream), or closed
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
    finally:
        os.close(null)


def fail(message: str, status: int = 2) -> NoReturn:
    """The error on one line of stderr (whatever path or name it quotes: `one_line`), and exit with `status`."""
    from storage.terminaltext import one_line

    print(f"session-lsp: {one_line(message)}", file=sys.stderr)
    raise SystemExit(status)
