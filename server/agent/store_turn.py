"""One agent turn on a session held in a session store (PostgreSQL), written back to the store.

The session is brought into the local projects folder as the SDK materialises it before a
store-backed resume (`storage.store_sync.bring_local`: written when there is no copy, caught up
when the copy is behind), the turn runs on that file through the ordinary loop and recorder, and
then the rows the turn wrote are appended to the store (`storage.store_sync.push_session`: one
transaction, idempotent by `uuid`, so running the push again after a failure duplicates nothing).
A turn that fails after recording its prompt still sends what it recorded, so the store and the
copy stay equal; a push that fails leaves the turn in the local copy and says how to send it.

The turn's tools are rooted at the person's own `cwd` (`TurnRequest.cwd`), never at the cwd the store's rows
record: those rows are written by whoever can insert into the shared database, and a recorded `~/.ssh` made the
always-on Read tool read a private key there and append it to the store (`tests/test_trust_store_cwd.py`). A
request without `cwd` is refused before anything is read or written.

Synchronous like `run_turn`: call it from a worker thread, not from inside a running event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from server.agent.events import TurnResult
from server.agent.loop import run_turn
from server.agent.request import TurnRequest
from storage.errors import InvalidArgument, SessionLspError, StoreError
from storage.paths import default_projects_dir
from storage.store_sync import bring_local, push_session

T = TypeVar("T")


@dataclass
class StoreTurn:
    result: TurnResult
    project_key: str
    pushed: int
    """Rows the store took from the turn."""

    def to_json(self) -> dict[str, Any]:
        return {**self.result.to_json(), "projectKey": self.project_key, "pushed": self.pushed}


def in_loop(store: Any, coro: Coroutine[Any, Any, T]) -> T:
    """Run a store coroutine in an event loop of its own, closing the store's connections after."""

    async def go() -> T:
        try:
            return await coro
        finally:
            close = getattr(store, "close", None)
            if callable(close):
                await close()

    return asyncio.run(go())


def push(store: Any, projects_dir: Path, project_key: str, session_id: str) -> int:
    """Send the local copy's new rows to the store; a store error names the copy and the retry."""
    try:
        return in_loop(store, push_session(store, projects_dir, project_key, session_id))
    except StoreError as exc:
        local = Path(projects_dir) / project_key / f"{session_id}.jsonl"
        raise type(exc)(
            f"{exc}; the turn is kept in {local}: send it with `session-lsp push {session_id} --store URL`"
        ) from exc


def require_own_cwd(request: TurnRequest) -> None:
    """A store turn's sandbox root comes from the person (`cwd`), not from the database (module docstring)."""
    if request.cwd is None or not request.cwd.strip():
        raise InvalidArgument(
            "parameter 'cwd' is required for a turn in a session store: the working directory the session records "
            "was written by whoever can write to the store, so it is never the root of the turn's tools; give the "
            "folder of yours the turn should work in"
        )


def run_store_turn(
    store: Any, project_key: str, session_id: str, request: TurnRequest, **turn_options: Any
) -> StoreTurn:
    """Run `request` (its prompt, provider, tools...) as a turn of the store session, then append
    what it wrote to the store. `turn_options` go to `run_turn` (on_event, cancel, provider, ask...)."""
    require_own_cwd(request)
    projects = Path(request.projects_dir or default_projects_dir()).expanduser()
    path = in_loop(store, bring_local(store, projects, project_key, session_id))
    local = dataclasses.replace(request, session=str(path), mode="resume", projects_dir=projects)
    try:
        result = run_turn(local, **turn_options)
    except BaseException:
        with contextlib.suppress(SessionLspError, OSError):
            push(store, projects, project_key, session_id)  # what was recorded (the prompt); the turn's error wins
        raise
    return StoreTurn(result, project_key, push(store, projects, project_key, session_id))
