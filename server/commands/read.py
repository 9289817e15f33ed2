"""`list`, `chain` and `overview`: the read side of storage on the command line."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from server.commands.common import (
    EXAMPLE_PROJECTS,
    CommandError,
    add_projects_dir,
    answered,
    decodable_projects,
    json_text,
    print_json,
    print_json_text,
    projects_dir,
)
from server.commands.store import add_store_option
from storage.paths import candidate_project_dirs, default_projects_dir, resolve_cwd
from storage.terminaltext import one_line

if TYPE_CHECKING:  # each command imports what it reads with (`list` never loads the resume machinery)
    from storage.resume import Resumed
    from storage.sessions import SessionInfo
    from storage.transcript import Transcript


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("list", help="list sessions, newest first")
    add_projects_dir(p)
    add_store_option(p)
    p.add_argument("--cwd", help="only the sessions of this working directory")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument(
        "--partial",
        action="store_true",
        help="read no file whole: counts, usage and forks the index does not hold yet are null (named in 'pending')",
    )
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("chain", help="the conversation that resume rebuilds")
    p.add_argument("session", nargs="?", help="session id, title or FILE.jsonl")
    p.add_argument("--continue", dest="cont", action="store_true", help="the latest session of --cwd")
    p.add_argument("--cwd", default=None, help="working directory (default: the current one)")
    add_projects_dir(p)
    add_store_option(p)
    p.add_argument("--bare", action="store_true", help="as `claude --bare --resume` sends it (no attachments)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_chain)

    p = sub.add_parser("overview", help="sessions with their chains and problems (the main job)")
    add_projects_dir(p)
    p.set_defaults(func=cmd_overview)


def relative_time(iso: str | None, now: datetime | None = None) -> str:
    if not iso:
        return "?"
    try:
        then = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return iso
    secs = ((now or datetime.now(timezone.utc)) - then).total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{int(secs // size)}{unit} ago"
    return "just now"


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def _sessions(args: argparse.Namespace) -> list[SessionInfo]:
    root = projects_dir(args)
    dirs = candidate_project_dirs(root, resolve_cwd(args.cwd)) if args.cwd else None
    from storage.indexedlist import list_sessions_indexed

    return list_sessions_indexed(root, dirs)


def cmd_list(args: argparse.Namespace) -> int:
    if args.store:
        if args.partial:
            raise CommandError("--partial lists the projects folder only, not a store")
        from server.commands.store import cmd_list_store

        return cmd_list_store(args)
    if args.partial:
        return _list_partial(args)
    if args.json:
        return _list_json(args)
    print_sessions(_sessions(args))
    return 0


def _list_json(args: argparse.Namespace) -> int:
    """The listing as JSON; the output kept for the folder as it is now when there is one
    (`server.lsp.answers`), and this one kept when the folder stayed settled and unchanged while it was made, and
    no session file was left out unread (`storage.unlisted`)."""
    from server.lsp.answers import command_key, keep_answer, kept_answer
    from storage.folderstamp import stamp_folder

    root = projects_dir(args)
    key = command_key("list --json", {"cwd": str(resolve_cwd(args.cwd)) if args.cwd else None}, root)
    before = stamp_folder(root)
    kept = kept_answer(key, before) if before is not None else None
    if kept is not None:
        print_json_text(kept)
        return 0
    from storage.unlisted import unlisted_count
    from storage.usagetotals import sessions_usage_indexed

    left_out = unlisted_count()
    sessions = _sessions(args)
    usage = sessions_usage_indexed(sessions)
    text = json_text([{**s.to_json(), "usage": u} for s, u in zip(sessions, usage, strict=True)])
    print_json_text(text)
    if before is not None and unlisted_count() == left_out:  # kept, it would be printed without saying so
        keep_answer(key, before, stamp_folder(root), text)
    return 0


def _list_partial(args: argparse.Namespace) -> int:
    from storage.partiallist import list_sessions_partial

    root = projects_dir(args)
    heads = list_sessions_partial(root, candidate_project_dirs(root, resolve_cwd(args.cwd)) if args.cwd else None)
    if args.json:
        print_json([h.to_json() for h in heads])
        return 0
    print_sessions([h.info for h in heads], uncounted={h.info.path for h in heads if "messageCount" in h.pending})
    return 0


def print_sessions(sessions: list[SessionInfo], uncounted: set[Path] | frozenset[Path] = frozenset()) -> None:
    """The sessions as a table; `uncounted` sessions show their message count as `…` (not counted yet)."""
    if not sessions:
        print("no sessions")
        return
    print(f"{'SESSION':36}  {'MODIFIED':>9}  {'MSGS':>5}  {'SIZE':>8}  TITLE")
    for s in sessions:
        extra = f"  [fork of {one_line(str(s.forked_from.get('sessionId', '?'))[:8])}]" if s.forked_from else ""
        subs = f"  [{len(s.subagents)} subagent(s)]" if s.subagents else ""
        count = "…" if s.path in uncounted else s.message_count
        print(
            f"{one_line(s.session_id):36}  {one_line(relative_time(s.modified)):>9}  {count:>5}  "
            f"{human_size(s.size):>8}  {one_line(s.title)}{extra}{subs}"
        )
        print(f"{'':36}  {one_line(s.cwd or '?')}")


def _resolve(args: argparse.Namespace) -> Path:
    from storage.lookup import find_continue, resolve_session

    cwd = args.cwd or os.getcwd()
    root = projects_dir(args)
    if args.cont:
        return find_continue(root, cwd)
    if not args.session:
        raise CommandError("give a session id, a title, a FILE.jsonl or --continue")
    return resolve_session(root, args.session, args.cwd)


def load_resumed(path: Path, *, bare: bool = False, load: Callable[[Path], Transcript] | None = None) -> Resumed:
    """The conversation a resume of `path` sends; `load` gives the file's link rows (default: through the index
    database, storing what it read)."""
    from server.index.onefile import file_transcript
    from storage.errors import NotATranscript
    from storage.resume import resume

    try:
        return resume(path, bare=bare, effort_statement=True, load=load or file_transcript)
    except NotATranscript as exc:
        raise CommandError(str(exc)) from exc
    except OSError as exc:
        raise CommandError(f"{path}: {exc.strerror or exc}") from exc


def cmd_chain(args: argparse.Namespace) -> int:
    if args.store:
        from server.commands.store import cmd_chain_store

        return cmd_chain_store(args)
    from storage.lookup import SessionNotFound

    try:
        path = _resolve(args)
    except SessionNotFound as exc:
        raise CommandError(str(exc)) from exc
    from server.index.onefile import OneFile

    with OneFile() as one:
        resumed = load_resumed(path, bare=args.bare, load=one)
        if args.json:
            print_json(resumed.to_json())
        else:
            print_conversation(resumed)
        answered()  # whoever reads the answer has it whole now, while the rows read are stored for the next run
        one.store()
    return 0


def _block_line(block: Any) -> str:
    from storage.sessions import text_of

    if not isinstance(block, dict):
        return str(block)
    btype = block.get("type")
    if btype == "text":
        return str(block.get("text", ""))
    if btype == "tool_use":
        return f"[tool call {one_line(block.get('name'))} {one_line(block.get('id'))}] {_short(block.get('input'))}"
    if btype == "tool_result":
        err = " error" if block.get("is_error") else ""
        content = _short(text_of(block.get("content")))
        return f"[tool result{err} {one_line(block.get('tool_use_id'))}] {content}"
    if btype in ("thinking", "redacted_thinking"):
        return "[thinking]"
    return f"[{one_line(btype)}]"


def _short(value: Any, limit: int = 160) -> str:
    """`value` on one line: its blanks folded, cut at `limit` characters, then written out (`one_line`)."""
    text = value if isinstance(value, str) else str(value)
    text = " ".join(text.split())
    return one_line(text if len(text) <= limit else text[: limit - 1] + "…")


def body_lines(text: str) -> list[str]:
    """The lines of a message's text as shown: cut at `\\n` (and `\\r\\n`) only, so a carriage return, form feed
    or line separator stays on its line, written out (`storage.terminaltext`), and draws nothing over it."""
    lines = text.replace("\r\n", "\n").split("\n")
    return lines[:-1] if len(lines) > 1 and not lines[-1] else lines


def print_conversation(resumed: Resumed, *, indent: str = "") -> None:
    leaf = resumed.chain.leaf.uuid if resumed.chain.leaf else None
    head = f"session {one_line(resumed.session_id)}  leaf {one_line(leaf)}"
    print(f"{indent}{head}  ({len(resumed.chain.rows)} rows on the chain)")
    for msg in resumed.messages:
        role = msg["role"]
        for i, block in enumerate(msg["content"]):
            head = f"{role:>9}: " if i == 0 else " " * 11
            text = _block_line(block)
            lines = body_lines(text)
            if role == "system":
                lines = [_short(text, 100)]
            print(f"{indent}{head}{lines[0]}")
            for extra in lines[1:12]:
                print(f"{indent}{' ' * 11}{extra}")
            if len(lines) > 12:
                print(f"{indent}{' ' * 11}… ({len(lines) - 12} more lines)")
        if not msg["content"]:
            print(f"{indent}{role:>9}: (empty)")


def cmd_overview(args: argparse.Namespace) -> int:
    try:
        return _overview(args)
    except (CommandError, BrokenPipeError, KeyboardInterrupt):
        raise
    except Exception as exc:  # a crash: status 2 and one line, never a traceback
        raise CommandError(f"overview failed: {type(exc).__name__}: {exc}") from exc


def _overview(args: argparse.Namespace) -> int:
    from server.commands.check import report_skipped
    from server.index import ProjectIndex
    from storage.errors import NotATranscript
    from storage.resume import resume
    from storage.sessions import list_sessions

    if args.projects_dir is None and not list_sessions(decodable_projects(default_projects_dir()), count=False):
        why = "holds no session" if default_projects_dir().is_dir() else "does not exist"
        args.projects_dir = EXAMPLE_PROJECTS
        print(f"({one_line(default_projects_dir())} {why}: using the bundled example {one_line(EXAMPLE_PROJECTS)})\n")
    root = projects_dir(args)
    sessions = list_sessions(root)
    index = ProjectIndex(root)
    index.scan()
    report_skipped(index.skipped)
    print(f"{len(sessions)} session(s) under {one_line(root)}\n")
    shown = 0
    for s in sessions:
        print("=" * 100)
        print(one_line(s.title))
        print(f"  {one_line(s.session_id)}  {one_line(s.cwd)}  {s.message_count} messages, {human_size(s.size)}")
        if s.forked_from:
            print(f"  forked from {one_line(s.forked_from.get('sessionId'))}")
        for sub in s.subagents:
            print(f"  subagent {one_line(sub['agentId'])} ({one_line(sub.get('agentType'))}): {one_line(sub['path'])}")
        try:
            resumed = resume(s.path)
        except (NotATranscript, OSError) as exc:
            print(f"  cannot resume: {one_line(exc)}")
            continue
        print_conversation(resumed, indent="  ")
        for path in [s.path, *(Path(sub["path"]) for sub in s.subagents)]:
            for d in index.diagnostics(path):
                if d.severity in ("error", "warning"):
                    shown += 1
                    print(f"  {d.severity}: {one_line(path)}:{d.line + 1}: [{d.code}] {one_line(d.message)}")
        print()
    found = index.all_diagnostics()
    counts = {
        sev: sum(1 + d.more for d in found if d.severity == sev) for sev in ("error", "warning", "information", "hint")
    }
    print(
        f"{len(sessions)} session(s); problems: {counts['error']} error(s), {counts['warning']} warning(s), "
        f"{counts['information']} information, {counts['hint']} hint(s) (details: session-lsp check)"
    )
    return 0
