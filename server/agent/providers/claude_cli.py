"""The `claude-cli` provider: the turn is run by an installed `claude` (`-p`, stream-json output),
for people whose Claude Code runs on a subscription. The CLI writes the transcript itself; we
relay its stream as turn events and report the rows it appended."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import threading
import time
import uuid as uuidlib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from server.agent.cancel import CancelToken
from server.agent.events import TurnEvent, TurnResult
from server.agent.providers.base import ProviderError, StepRunner
from server.agent.providers.cli_trust import setting_source_args
from server.agent.request import TurnRequest
from server.agent.tools import READ_ONLY, WRITERS
from server.agent.tools.base import SERVER_SECRETS
from server.agent.tools.bash import DRAIN_S
from server.agent.tools.drain import DRAIN
from server.agent.tools.processes import Supervised, kill_tree
from storage.admission import admit
from storage.errors import InvalidArgument
from storage.fileopen import open_regular
from storage.linechunks import LongLine, each_line
from storage.lookup import find_continue
from storage.paths import default_projects_dir, project_folder_name, resolve_cwd
from storage.transcript import Transcript

NAME = "claude-cli"
INTERRUPT_GRACE = 5.0


FILE_TOOLS = frozenset({"Read", "Glob", "Grep", "LS"})
"""The CLI's reading tools that take a path: allowed only inside the working directory (`allow_args`)."""
EDITORS = ("Edit", "Write")


def allow_args(tools: list[str]) -> list[str]:
    """The CLI's permission arguments for `tools`: a file tool allowed only inside the working directory
    (`Read(./**)`: a bare `Read` allows every path of the machine, `~/.ssh` included; the CLI scopes Write by its
    `Edit(...)` rule, so an editor not allowed is disallowed by name), Bash bare (a shell reaches anything)."""
    rules = [f"{t}(./**)" if t in FILE_TOOLS else t for t in tools if t not in EDITORS]
    editors = [t for t in EDITORS if t in tools]
    if editors:
        rules.append("Edit(./**)")
    out = ["--allowedTools", ",".join(rules)]
    if editors and len(editors) < len(EDITORS):
        out += ["--disallowedTools", ",".join(t for t in EDITORS if t not in editors)]
    return out


def find_claude_binary(env: Mapping[str, str] | None = None) -> str | None:
    env = os.environ if env is None else env
    return env.get("SESSION_LSP_CLAUDE") or shutil.which("claude", path=env.get("PATH"))


class ClaudeCliProvider:
    name = NAME

    def __init__(
        self, *, model: str | None = None, binary: str | None = None, env: Mapping[str, str] | None = None
    ) -> None:
        self.env = dict(os.environ if env is None else env)
        found = binary or find_claude_binary(self.env)
        if not found:
            raise ProviderError(
                "`claude` is not on the PATH: install Claude Code, or use --provider anthropic with ANTHROPIC_API_KEY",
                kind="no_key",
            )
        self.binary = found
        self.model = model or ""

    def command(
        self, request: TurnRequest, resume: Path | None, cwd: str, env: Mapping[str, str] | None = None
    ) -> tuple[list[str], str]:
        """The argv and the session id the CLI will write to (run in `cwd` with `env`, default the provider's):
        `cwd`'s own settings only where Claude Code trusts the folder (`cli_trust`). `resume`: the decided file of the
        session to resume (or fork), passed by its path, never by id (`resume_args`); None for a new session."""
        cmd = [
            self.binary,
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
        ]
        tools = [
            *READ_ONLY,
            *(t for t in WRITERS if t.lower() in {x.lower() for x in request.tools} or "all" in request.tools),
        ]
        cmd += allow_args(tools)
        cmd += setting_source_args(cwd, self.env if env is None else env)
        if self.model:
            cmd += ["--model", self.model]
        if resume is None:
            session_id = str(uuidlib.uuid4())
            cmd += ["--session-id", session_id]
        else:
            session_id = resume.stem
            cmd += resume_args(resume, fork=request.mode == "fork")
        # the prompt last, after `--`: a prompt starting with `-` is the prompt, never an option of the CLI
        cmd += ["--", request.prompt]
        return cmd, session_id

    def run_turn(
        self,
        request: TurnRequest,
        *,
        steps: StepRunner,
        on_event: Callable[[TurnEvent], None],
        cancel: CancelToken,
    ) -> TurnResult:
        """The CLI runs the whole turn (and picks the resumed session's model itself): `steps` is unused."""
        projects = Path(request.projects_dir or default_projects_dir()).expanduser()
        env = dict(self.env)
        for name in SERVER_SECRETS:  # the CLI's own tools have no use for this server's secrets
            env.pop(name, None)
        if request.projects_dir is not None:
            env["CLAUDE_CONFIG_DIR"] = str(projects.parent)
        cwd, path, before = self._target(request, projects)
        cmd, session_id = self.command(request, path, cwd, env)
        # the real CLI registers itself; our lock keeps our other writers out until it has ended, the file's own lock
        # (which the CLI does not take, nor is held back by) also those that come by another name of its folder
        admission = (
            admit(session_id, config_dir=projects.parent, cwd=cwd, register=False, transcript=path)
            if session_id
            else None
        )
        try:
            written = path if path is not None and request.mode != "fork" else None
            return self._run(cmd, cwd, env, projects, session_id, before, on_event, cancel, written)
        finally:
            if admission is not None:
                admission.release()

    def _run(
        self,
        cmd: list[str],
        cwd: str,
        env: dict[str, str],
        projects: Path,
        session_id: str,
        before: set[str],
        on_event: Callable[[TurnEvent], None],
        cancel: CancelToken,
        resumed: Path | None = None,
    ) -> TurnResult:
        """Run the CLI and relay its stream; `resumed`: the file it appends to (a resume), else it writes a new session
        in `cwd`'s project folder (a new session, a fork)."""
        run = Supervised(cmd, cwd=cwd, env=env)
        proc = run.proc  # the supervisor: the CLI and all it starts end with this process, however it ends
        unregister = cancel.on_cancel(lambda: _interrupt(proc))
        # both streams read by the drain's thread, never to their end only: a job the CLI's Bash left may hold them
        # (`/proc/$PPID/fd/1`), and the turn ends `DRAIN_S` after the CLI did, as a Bash call does after its command
        chunks: queue.SimpleQueue[bytes] = queue.SimpleQueue()
        stdout_ended = DRAIN.read(proc.stdout, chunks.put) if proc.stdout is not None else None
        stderr = _Kept()
        stderr_ended = DRAIN.read(proc.stderr, stderr.take) if proc.stderr is not None else None
        result = TurnResult(session_id, "", provider=self.name, model=self.model)
        final: dict[str, Any] = {}
        try:
            for line in _lines(chunks, stdout_ended, run):
                event = _parse(line)
                if event is None:
                    continue
                if event.get("type") == "system" and event.get("subtype") == "init":
                    result.session_id = event.get("session_id") or result.session_id
                    result.model = event.get("model") or result.model
                if event.get("type") == "result":
                    final = event
                _relay(event, on_event)
        finally:
            returncode = run.wait()  # the CLI's own status; what it left in the background may run on
            unregister()
            if stderr_ended is not None:
                stderr_ended.wait(DRAIN_S)  # what it said last, for the error below
        result.session_id = final.get("session_id") or result.session_id
        path = resumed or projects / project_folder_name(resolve_cwd(cwd)) / f"{result.session_id}.jsonl"
        result.path = str(path)
        if cancel.cancelled:
            result.cancelled = True
            result.stop_reason = "cancelled"
        elif returncode != 0 or final.get("is_error"):
            message = final.get("result") or stderr.text().strip() or f"exit status {returncode}"
            raise ProviderError(f"claude failed: {message}")
        else:
            result.stop_reason = final.get("stop_reason") or "end_turn"
        result.text = str(final.get("result") or "")
        result.usage.add(final.get("usage"))
        after = _uuids(path)
        result.appended = [u for u in after if u not in before]
        on_event(TurnEvent("done", result.to_json()))
        return result

    def _target(self, request: TurnRequest, projects: Path) -> tuple[str, Path | None, set[str]]:
        """(cwd to run in, the decided file of the session to resume or None, uuids already in its file)."""
        from server.agent.session import find_session, not_from_store, sandbox_root

        mode = request.mode if request.mode != "auto" else ("resume" if request.session else "new")
        if mode == "new":
            return str(sandbox_root(request.cwd, ".")), None, set()
        if mode == "continue":
            path = find_continue(projects, resolve_cwd(request.cwd or "."), access="write")
        elif request.session:
            path = find_session(projects, request.session, request.cwd)
        else:
            raise InvalidArgument(f"mode {mode} needs a session")
        if request.cwd is None:  # as `open_session`: a store's recorded cwd never roots the CLI's tools
            not_from_store(projects, path)
        recorded = _recorded_cwd(path) or "."
        return str(sandbox_root(request.cwd, recorded, config=projects.parent)), path, set(_uuids(path))


def resume_args(path: Path, *, fork: bool) -> list[str]:
    """The CLI's arguments to resume (or `fork`) the session file `path`, as decided and admitted: by its path. By id
    the CLI 2.1.328 resumes, and appends to, the `<id>.jsonl` of the project folder of the cwd it runs in, else of
    another folder holding one: a file of the same id in another project folder (a copy, a file moved in, a
    session resumed with another `cwd`), never admitted nor locked, while the admitted file was left as it was.
    Given a path, it appends to that file from whatever folder it runs in (a fork goes to a new session of `cwd`'s
    project folder, as by id)."""
    return ["--resume", str(path), *(["--fork-session"] if fork else [])]


def _recorded_cwd(path: Path) -> str | None:
    """The `cwd` the session's rows carry (where its turn runs when the request names no `cwd`). A line over
    `linechunks.MAX_LINE_BYTES` is passed over unread (a file iterated by lines held a line of any length)."""
    with open_regular(path) as fh:
        for line in each_line(fh, 1 << 20):
            row = None if isinstance(line, LongLine) else _parse(line.decode("utf-8", "replace"))
            if row and isinstance(cwd := row.get("cwd"), str):
                return cwd
    return None


def _uuids(path: Path) -> list[str]:
    if not path.is_file():
        return []
    return [r.uuid for r in Transcript.load(path).rows if r.uuid and r.is_chain_row]


LINES_POLL_S = 0.05
"""How often the stream's reader looks whether the CLI ended, while no output comes."""
STDERR_KEEP = 64 * 1024
"""Bytes of the CLI's standard error kept for the error a failed turn reports."""


def _lines(chunks: queue.SimpleQueue[bytes], ended: threading.Event | None, run: Supervised) -> Iterator[str]:
    """The CLI's output, line by line, until its end of file, or `DRAIN_S` after the CLI itself ended: what it
    left running may hold the pipe for good (its last lines are in the pipe before it ends)."""
    pending: list[bytes] = []
    exited: float | None = None
    looked = time.monotonic()
    while ended is not None:
        try:
            chunk = chunks.get(timeout=LINES_POLL_S)
        except queue.Empty:
            if ended.is_set() and chunks.empty():
                break  # every chunk is put before the end is set
            chunk = None
        now = time.monotonic()
        if exited is None and (chunk is None or now - looked >= LINES_POLL_S):  # also while output keeps coming
            looked = now
            try:
                run.wait(timeout=0)
                exited = now
            except subprocess.TimeoutExpired:
                pass
        elif exited is not None and now - exited >= DRAIN_S:
            break  # a job it left may write to the pipe for good
        if chunk is None:
            continue
        if b"\n" not in chunk:  # a long line comes in many chunks: joined once, when it ends
            pending.append(chunk)
            continue
        first, *lines = chunk.split(b"\n")
        pending.append(first)
        yield b"".join(pending).decode("utf-8", errors="replace")
        pending = [lines.pop()]
        for line in lines:
            yield line.decode("utf-8", errors="replace")
    rest = b"".join(pending)
    if rest:
        yield rest.decode("utf-8", errors="replace")


class _Kept:
    """The first `STDERR_KEEP` bytes of a stream (given by the drain's thread)."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.size = 0

    def take(self, chunk: bytes) -> None:
        if self.size < STDERR_KEEP:
            self.chunks.append(chunk[: STDERR_KEEP - self.size])
            self.size += len(self.chunks[-1])

    def text(self) -> str:
        return b"".join(list(self.chunks)).decode("utf-8", errors="replace")


def _parse(line: str) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _relay(event: dict[str, Any], on_event: Callable[[TurnEvent], None]) -> None:
    kind = event.get("type")
    if kind == "stream_event":
        inner = event.get("event") or {}
        delta = inner.get("delta") or {}
        if inner.get("type") == "content_block_delta" and delta.get("type") == "text_delta":
            on_event(TurnEvent("text", {"text": delta.get("text", "")}))
        return
    message = found if isinstance(found := event.get("message"), dict) else {}
    blocks = found if isinstance(found := message.get("content"), list) else []
    if event.get("parent_tool_use_id"):
        return
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if kind == "assistant" and block.get("type") == "tool_use":
            on_event(
                TurnEvent("tool_call", {"id": block.get("id"), "name": block.get("name"), "input": block.get("input")})
            )
        elif kind == "user" and block.get("type") == "tool_result":
            content = block.get("content")
            text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
            on_event(
                TurnEvent(
                    "tool_result",
                    {
                        "id": block.get("tool_use_id"),
                        "name": None,
                        "isError": bool(block.get("is_error")),
                        "content": text[:2000],
                    },
                )
            )


def _interrupt(proc: subprocess.Popen[bytes]) -> None:
    """SIGINT the CLI's process group (it records the interruption): its supervisor, alone in its own group, passes
    it on; then kill the whole tree if it lingers."""

    def escalate() -> None:
        try:
            proc.wait(timeout=INTERRUPT_GRACE)
        except subprocess.TimeoutExpired:
            kill_tree(proc)

    try:
        os.killpg(proc.pid, signal.SIGINT)
    except (ProcessLookupError, PermissionError):
        return
    threading.Thread(target=escalate, daemon=True).start()
