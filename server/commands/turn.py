"""`session-lsp turn`: run one turn of a session from the command line, streaming the reply."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from server.agent.cancel import CancelToken
from server.agent.events import TurnEvent
from server.agent.loop import run_turn
from server.agent.providers.base import ProviderError
from server.agent.providers.choose import PROVIDERS
from server.agent.request import SessionMode, TurnRequest
from server.commands.common import CommandError, add_projects_dir, decodable_projects, print_json, store_url
from storage.livesession import SessionInUse
from storage.lookup import SessionNotFound
from storage.paths import candidate_project_dirs, default_projects_dir, iter_session_files, resolve_cwd
from storage.recorder import SessionIdInUse
from storage.terminaltext import one_line

STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""The signals that cancel a running turn: Ctrl-C, a process manager's stop, the terminal closed."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "turn",
        help="run one turn (prompt -> reply, with tools), recorded so `claude --resume` continues it",
        description="Run one turn of a Claude Code session. Without --resume/--continue/--new, a session "
        "of the working directory is continued if it has one, else a new one is started.",
    )
    p.add_argument("prompt", help="what to say")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--resume", "-r", metavar="SESSION", help="session id, title or FILE.jsonl to continue")
    which.add_argument("--continue", "-c", dest="cont", action="store_true", help="the latest session of --cwd")
    which.add_argument("--new", action="store_true", help="start a new session")
    p.add_argument("--fork", action="store_true", help="with --resume/--continue: write to a fork of the session")
    p.add_argument("--cwd", default=None, help="working directory (default: the current one)")
    add_projects_dir(p)
    p.add_argument(
        "--provider",
        choices=PROVIDERS,
        default=None,
        help="anthropic (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL), claude-cli (installed `claude`); "
        "default: anthropic if a key is set, else claude-cli if `claude` is on the PATH",
    )
    p.add_argument("--model", default=None, help="model name (default: $ANTHROPIC_MODEL or the provider's)")
    p.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="TOOL",
        help="also allow Bash, Edit or Write (repeat, or `all`); Read/Glob/Grep/LS are always on",
    )
    p.add_argument(
        "--store",
        type=store_url,
        metavar="URL",
        default=None,
        help="with --resume/--continue: a session of this session store (postgresql://...); the turn is "
        "recorded in a local copy and appended to the store",
    )
    p.add_argument("--store-schema", default="session_store", help="the store's PostgreSQL schema")
    p.add_argument("--max-steps", type=int, default=50, help="model responses per turn at most")
    p.add_argument("--json", action="store_true", help="print the result as JSON (no streaming)")
    p.add_argument("--events", action="store_true", help="print every event as a JSON line while running")
    p.set_defaults(func=cmd_turn)


def build_request(args: argparse.Namespace) -> TurnRequest:
    cwd = resolve_cwd(args.cwd or ".")
    projects = decodable_projects(Path(args.projects_dir).expanduser() if args.projects_dir else default_projects_dir())
    mode: SessionMode
    if args.new:
        mode, session = "new", None
    elif args.resume:
        mode, session = ("fork" if args.fork else "resume"), args.resume
    elif args.cont or _has_sessions(projects, cwd):
        mode, session = "continue", None
        if args.fork:
            raise CommandError("--fork needs --resume SESSION")
    else:
        mode, session = "new", None
    return TurnRequest(
        prompt=args.prompt,
        session=session,
        cwd=cwd,
        mode=mode,
        projects_dir=projects,
        provider=args.provider,
        model=args.model,
        tools=tuple(args.allow),
        max_steps=args.max_steps,
    )


def _has_sessions(projects: Path, cwd: str) -> bool:
    return any(True for d in candidate_project_dirs(projects, cwd) for _ in iter_session_files(d))


class _Printer:
    """Streams text to stdout (its lines and tabs kept, every other control written out by the stream in front of
    stdout: `storage.terminaltext`) and tool activity to stderr, one line each (`one_line`)."""

    def __init__(self, events: bool) -> None:
        self.events = events
        self.at_line_start = True

    def __call__(self, event: TurnEvent) -> None:
        if self.events:
            print_json(event.to_json())
            return
        if event.kind == "text":
            text = event.data.get("text", "")
            sys.stdout.write(text)
            sys.stdout.flush()
            if text:
                self.at_line_start = text.endswith("\n")
        elif event.kind == "tool_call":
            self._newline()
            print(f"  ⏺ {one_line(event.data['name'])}({_brief(event.data.get('input'))})", file=sys.stderr)
        elif event.kind == "tool_result" and event.data.get("isError"):
            first = str(event.data.get("content", "")).split("\n", 1)[0]
            print(f"    ⎿ error: {one_line(first)}", file=sys.stderr)
        elif event.kind == "retry":
            print(f"  (retry {event.data['attempt']}: {one_line(event.data['error'])})", file=sys.stderr)
        elif event.kind == "done":
            self._newline()

    def _newline(self) -> None:
        if not self.at_line_start:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self.at_line_start = True


def _brief(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{one_line(k)}: {one_line(str(v)[:60])}" for k, v in value.items())
    return one_line(str(value)[:80])


def cmd_turn(args: argparse.Namespace) -> int:
    request = build_request(args)
    token = CancelToken()
    printer = None if args.json else _Printer(args.events)
    stopped: list[int] = []
    """The signal that stopped the turn, if one did."""
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        previous = {sig: signal.signal(sig, _stopper(token, stopped)) for sig in STOPPING}
    done = None
    try:
        if args.store:
            from server.commands.store_write import turn_on_store

            done = turn_on_store(args, request, on_event=printer, cancel=token)
            result = done.result
        else:
            result = run_turn(request, on_event=printer, cancel=token)
    except (ProviderError, SessionNotFound, SessionIdInUse, SessionInUse, ValueError) as exc:
        raise CommandError(str(exc)) from exc
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if args.json:
        print_json(done.to_json() if done is not None else result.to_json())
    elif printer is not None and not args.events:
        printer._newline()
        state = " (cancelled)" if result.cancelled else ""
        print(f"session {one_line(result.session_id)}{state}: {one_line(result.path)}", file=sys.stderr)
        if done is not None:
            where = one_line(f"{done.project_key}/{result.session_id}")
            print(f"{done.pushed} row(s) appended to the store ({where})", file=sys.stderr)
    if not result.cancelled:
        return 0
    return 128 + (stopped[0] if stopped else signal.SIGINT)  # 130 after Ctrl-C


def _stopper(token: CancelToken, stopped: list[int]) -> Callable[[int, Any], None]:
    """A handler of the signals that stop a turn: the turn is cancelled (the commands its tools started are killed,
    and the interruption is recorded); SIGTERM or SIGHUP once more ends the process on the spot. The token is
    cancelled on a thread of its own: the handler runs on the main thread between two of its instructions, maybe
    while it holds the token's lock (registering a request's or a tool call's waker), which `cancel` takes."""

    def stop(signum: int, _frame: Any) -> None:
        stopped.append(signum)
        threading.Thread(target=token.cancel, name="turn-stop", daemon=True).start()
        if signum != signal.SIGINT:
            signal.signal(signum, signal.SIG_DFL)

    return stop
