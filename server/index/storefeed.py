"""Keep one session store's mirror and its index live: LISTEN for the store's NOTIFYs, mirror the
sessions they name, index the files that changed and report them as the watcher reports local files.

On its own thread and event loop: connect (read-only), LISTEN, then read the whole store into the
mirror (after LISTEN, so no change falls between the two), then follow the notifications. Those that
arrive while a refresh runs are taken together by the next one, so a burst of appends costs one read
per session. A lost connection (the database restarted, the network) is retried every few seconds,
and each reconnection reads the whole store again: nothing missed while away stays missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from server.index.store import ChangeSet, ProjectIndex
from storage.cache import cache_dir, open_private_folder
from storage.procinfo import pid_alive
from storage.store_mirror import MirrorChange, StoreMirror
from storage.store_source import StoreSource

log = logging.getLogger(__name__)
SCHEME = "session-store"
"""The URI scheme of a mirror file as the editor sees it (`server.index.storeset`)."""
RETRY = (0.5, 5.0)
"""Seconds before reconnecting: the first wait, and the longest."""


def new_mirror_base() -> Path:
    """A private folder of this process for its mirrors (`<cache>/store-mirrors/<pid>-*`, 0700); the
    folders of processes that are gone are removed first. Both by name in `store-mirrors` opened by descriptor
    (`storage.cache.open_private_folder`): a folder swapped for a link out since is never followed."""
    cache = cache_dir()
    if cache is None:
        return Path(tempfile.mkdtemp(prefix="slsp-mirrors-"))
    parent = cache / "store-mirrors"
    folder = open_private_folder(parent)
    try:
        for entry in os.scandir(folder):
            pid = entry.name.split("-", 1)[0]
            # pid 1 is always alive (pid_alive says False for it: a registry rule, not ours)
            if pid.isdigit() and int(pid) > 1 and entry.is_dir(follow_symlinks=False) and not pid_alive(int(pid)):
                shutil.rmtree(entry.name, ignore_errors=True, dir_fd=folder)
        while True:
            name = f"{os.getpid()}-{secrets.token_hex(6)}"
            try:
                os.mkdir(name, 0o700, dir_fd=folder)
                return parent / name
            except FileExistsError:
                continue
    finally:
        os.close(folder)


class StoreFeed:
    """One store mirrored under `root`, indexed by `index`; `on_change` gets each `ChangeSet`."""

    def __init__(self, source: StoreSource, root: Path, on_change: Callable[[ChangeSet], None] | None = None) -> None:
        self.source = source
        self.mirror = StoreMirror(root)
        self.root = self.mirror.root
        self.index = ProjectIndex(self.root, persist=False)
        self.on_change = on_change
        self.ready = threading.Event()
        """Set once the first read of the store is done, or has failed."""
        self.error: str | None = None
        """Why the store cannot be read now (None while it is followed)."""
        self.updated: float | None = None
        """When (epoch seconds) the last change of the store reached the index."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=f"store-{source.id}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def uri_of(self, path: Path) -> str:
        """`session-store://<store id>/<path in the mirror>` of a file of this mirror."""
        rel = Path(os.path.realpath(path)).relative_to(self.root)
        return f"{SCHEME}://{self.source.id}/{quote(rel.as_posix())}"

    def stop(self) -> None:
        """Ask the feed to end (at once; `join` waits for it). Safe to call again."""
        self._stopped = True
        loop, task = self._loop, self._task
        if loop is not None and task is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nothing left to stop
                loop.call_soon_threadsafe(task.cancel)

    def join(self, timeout: float) -> None:
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    # -- the feed's own thread -------------------------------------------------------------
    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            self._task = loop.create_task(self._main())
            loop.run_until_complete(self._task)
        except asyncio.CancelledError:
            pass
        except ImportError as exc:  # the `pg` extra is not installed
            self.error = f"the PostgreSQL store needs psycopg: pip install 'session-lsp[pg]' ({exc})"
            log.error("store %s: %s", self.source.name, self.error)
        finally:
            self.ready.set()
            loop.close()

    async def _main(self) -> None:
        import psycopg

        from storage.errors import SessionLspError
        from storage.pgstore import PostgresSessionStore

        store = PostgresSessionStore(self.source.url, schema=self.source.schema, read_only=True, max_size=2)
        delay = RETRY[0]
        try:
            while not self._stopped:
                try:
                    await self._session(store)
                except (psycopg.Error, OSError, SessionLspError) as exc:
                    reason = str(exc).strip() or type(exc).__name__
                    if self.error != reason:
                        log.warning("store %s: %s; retrying", self.source.name, reason)
                    self.error = reason
                    self.ready.set()
                except Exception as exc:  # noqa: BLE001 - a failure of ours: shown as the store's error, retried
                    log.exception("store %s: reading it failed; retrying", self.source.name)
                    self.error = f"reading the store failed: {type(exc).__name__}: {exc}"
                    self.ready.set()
                else:
                    delay = RETRY[0]
                await store.close()
                if not self._stopped:
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, RETRY[1])
        finally:
            await store.close()

    async def _session(self, store: Any) -> None:
        """One connection's life: LISTEN, read the whole store, then follow it until the connection ends."""
        import psycopg

        from storage.pgstore import CHANNEL

        conn = await psycopg.AsyncConnection.connect(
            self.source.url, autocommit=True, connect_timeout=5, application_name="session-lsp-listen"
        )
        async with conn:
            await conn.execute(f"LISTEN {CHANNEL}")
            await self._resync(store)
            if self.error is not None:
                log.warning("store %s: read again after: %s", self.source.name, self.error)
            self.error = None
            self.ready.set()
            await self._follow(conn, store)

    async def _follow(self, conn: Any, store: Any) -> None:
        """Refresh the sessions the notifications name until the connection fails."""
        pending: set[tuple[str, str]] = set()
        resync = False
        wake = asyncio.Event()

        async def listen() -> None:
            nonlocal resync
            async for note in conn.notifies():
                key = self._key_of(note.payload)
                if isinstance(key, tuple):
                    pending.add(key)
                elif key == "resync":
                    resync = True
                wake.set()

        reader = asyncio.create_task(listen())
        waiter: asyncio.Task[Any] | None = None
        try:
            while True:
                waiter = asyncio.create_task(wake.wait())
                done, _ = await asyncio.wait({reader, waiter}, return_when=asyncio.FIRST_COMPLETED)
                if reader in done:
                    reader.result()  # raises why the connection ended
                    return
                wake.clear()
                keys, pending = set(pending), set()
                if resync:
                    resync = False
                    await self._resync(store)
                elif keys:
                    await self._refresh(store, keys)
        finally:
            reader.cancel()
            if waiter is not None:
                waiter.cancel()

    def _key_of(self, payload: str) -> tuple[str, str] | str | None:
        try:
            data = json.loads(payload)
        except ValueError:
            return None
        if not isinstance(data, dict) or data.get("schema") != self.source.schema:
            return None
        if data.get("op") == "resync":
            return "resync"
        project_key, session_id = data.get("project_key"), data.get("session_id")
        if isinstance(project_key, str) and isinstance(session_id, str):
            return project_key, session_id
        return None

    async def _resync(self, store: Any) -> None:
        """Read the whole store (only what the mirror does not hold yet) and drop what it no longer has."""
        projects = await store.list_project_keys()
        change = MirrorChange()
        for project_key in self.mirror.projects() - set(projects):
            change.merge(self.mirror.remove_project(project_key))
        for project_key in projects:
            change.merge(await self._load(store, project_key, None))
        self._apply(change)

    async def _refresh(self, store: Any, keys: set[tuple[str, str]]) -> None:
        started = time.monotonic()
        change = MirrorChange()
        projects: dict[str, set[str]] = {}
        for project_key, session_id in keys:
            projects.setdefault(project_key, set()).add(session_id)
        for project_key, wanted in sorted(projects.items()):
            change.merge(await self._load(store, project_key, sorted(wanted)))
        self._apply(change)
        log.debug(
            "store %s: %d session(s) read again in %.3f s", self.source.name, len(keys), time.monotonic() - started
        )

    async def _load(self, store: Any, project_key: str, session_ids: list[str] | None) -> MirrorChange:
        """What is new in these sessions (all of the project's when None); a session whose files are
        not as the mirror left them is read again whole."""
        held = self.mirror.held(project_key, session_ids)
        tails = await store.load_tails(project_key, session_ids, held)
        change, stale = self.mirror.apply(project_key, session_ids, tails)
        if stale:
            log.warning(
                "store %s: %d mirrored session(s) changed on disk; reading them again", self.source.name, len(stale)
            )
            self.mirror.forget(project_key, stale)
            tails = await store.load_tails(project_key, sorted(stale), {})
            again, _ = self.mirror.apply(project_key, sorted(stale), tails)
            change.merge(again)
        return change

    def _apply(self, change: MirrorChange) -> None:
        changes = ChangeSet()
        for path in sorted(change.written | change.removed):
            changes.merge(self.index.update_file(path))
        if change:
            self.updated = time.time()
        if changes and self.on_change is not None:
            try:
                self.on_change(changes)
            except Exception:  # noqa: BLE001 - a failing listener must not stop the feed
                log.exception("store %s: reporting a change failed", self.source.name)
