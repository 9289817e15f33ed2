"""A store session and its local copy kept in step, row by row, in either direction.

A store session continued on this machine (a turn of our agent, or `claude --resume` on a pulled
copy) lives in a local file for the turn's length. `bring_local` makes that copy: it writes the
session as the SDK does when there is none, and when there is one it appends only what the store
gained since (never rewriting a line). `push_session` then sends the store exactly the rows each
local file (the main transcript and any subagent transcript) holds beyond the longest start it
shares with the store: one `append` (one transaction) per file. Both compare parsed rows, not
bytes: the store keeps JSON values, and a copy's lines may be written by another JSON encoder.

Pushing twice adds nothing, also when other writers appended to the store in between: only rows
the store does not hold are sent (`unsent`: a `uuid` it holds, or an equal uuid-less row after the
shared start, is held), so a title or tag row is not sent again, and a new one is not lost in a
batch the store would skip whole as a retry (the SessionStore contract as `storage.pgstore` keeps it).

Every local file is decided by `storage.access.resolve_target` like any other transcript we read or
append to: a store key that is not a project folder name and a session UUID, or a copy whose real
path leaves the projects folder (a symlinked project folder, session folder or file), is refused
before anything is read or sent. Both directions hold the session's writer lock
(`storage.admission`) while they read and write, so they never interleave with a local turn.

Only the protocol's `load()`, `append()` and `list_subkeys()` are used, so any SessionStore works.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from storage.access import resolve_target
from storage.admission import admit
from storage.errors import InvalidArgument, NotATranscript, StoreDiverged
from storage.fileopen import open_regular
from storage.linechunks import OVER_LIMIT, LongLine, each_line
from storage.livesession import config_dir_of
from storage.paths import UUID_RE
from storage.store_materialize import (
    jsonl_bytes,
    load_session,
    safe_subpath,
    session_files,
    split_agent_metadata,
    write_files,
    write_session,
)
from storage.storeorigin import mark_from_store
from storage.writequeue import append_lines

CHUNK = 8 * 1024 * 1024


def file_rows(path: Path) -> list[Any]:
    """The JSON value of every non-blank line of `path`; a line that does not parse is an error
    (a local copy we push is one we or the CLI wrote whole), and so is one over `MAX_LINE_BYTES` (not read)."""
    rows = []
    with open_regular(path) as fh:
        for number, line in enumerate(each_line(fh, CHUNK), 1):
            if isinstance(line, LongLine):
                raise NotATranscript(
                    f"{path}:{number}: a line of {line.length:,} bytes, {OVER_LIMIT}; nothing was sent"
                )
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except (ValueError, RecursionError) as exc:  # nested past Python's parser too
                raise NotATranscript(f"{path}:{number}: not a JSON line ({exc}); nothing was sent") from exc
    return rows


def shared_start(a: list[Any], b: list[Any]) -> int:
    """How many rows the two lists share from their start."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _uuid_of(row: Any) -> str | None:
    uid = row.get("uuid") if isinstance(row, dict) else None
    return uid if isinstance(uid, str) and uid else None


def unsent(stored: list[Any], ahead: list[Any], shared: int) -> list[Any]:
    """The rows of `ahead` (the local rows after the `shared` start) the store does not hold yet.

    Rows the store took from an earlier push sit after the shared start, among other writers' rows:
    a row with a `uuid` is held when the store holds that `uuid`; one without (a title, a tag) when
    an equal row is stored after the shared start, each stored row matching one local row. Sending
    only these keeps a push from repeating the uuid-less ones, and from a batch the store would skip
    whole as a retry (its uuids all stored) when a new uuid-less row rides with them."""
    uuids = {u for u in map(_uuid_of, stored) if u is not None}
    others: dict[str, int] = {}
    for row in stored[shared:]:
        if _uuid_of(row) is None:
            text = json.dumps(row, sort_keys=True)
            others[text] = others.get(text, 0) + 1
    out = []
    for row in ahead:
        uid = _uuid_of(row)
        if uid is not None:
            if uid not in uuids:
                uuids.add(uid)
                out.append(row)
            continue
        text = json.dumps(row, sort_keys=True)
        if others.get(text, 0) > 0:
            others[text] -= 1
        else:
            out.append(row)
    return out


def _key(project_key: str, session_id: str, subpath: str | None) -> dict[str, str]:
    key = {"project_key": project_key, "session_id": session_id}
    return {**key, "subpath": subpath} if subpath else key


def check_key(project_key: str, session_id: str) -> None:
    """A store key that names a local session: one project folder name and a session UUID."""
    if not safe_subpath(project_key) or any(c in project_key for c in "/\\"):
        raise InvalidArgument(f"the store's project key {project_key!r} is not a project folder name")
    if "\x00" in session_id or not UUID_RE.match(session_id):
        raise InvalidArgument(f"the store's session id {session_id!r} is not a session id")


def local_main(projects_dir: Path, project_key: str, session_id: str) -> Path:
    """Where the local copy of a store session is (it may not exist); the key checked first."""
    check_key(project_key, session_id)
    return Path(projects_dir) / project_key / f"{session_id}.jsonl"


def local_streams(projects_dir: Path, project_key: str, session_id: str) -> dict[str | None, Path]:
    """The local transcripts of a session by store subpath: None for the main one, then
    `subagents/agent-<id>` (the path under the session's folder, without `.jsonl`), each the real
    path `resolve_target` allows reading (`NotFound` without a local copy)."""
    main = local_main(projects_dir, project_key, session_id)
    streams: dict[str | None, Path] = {None: resolve_target(projects_dir, path=main, access="read")}
    folder = main.parent / session_id
    if folder.is_dir():
        for sub in sorted(folder.rglob("*.jsonl")):
            if sub.is_file() and not sub.is_symlink():
                streams[str(sub.relative_to(folder).with_suffix(""))] = resolve_target(
                    projects_dir, path=sub, access="read"
                )
    return streams


async def _stored_rows(store: Any, key: dict[str, str]) -> list[Any]:
    """The transcript rows stored under a key (a subagent's `agent_metadata` entries left out)."""
    entries = await store.load(key) or []
    return split_agent_metadata(entries)[1] if "subpath" in key else entries


async def push_session(store: Any, projects_dir: Path, project_key: str, session_id: str) -> int:
    """Append to the store the rows the local copy holds beyond what it shares with the store;
    returns how many rows the store took (0 when it had them all; counted as the key's growth,
    so a concurrent writer's rows would count too)."""
    check_key(project_key, session_id)
    main = local_main(projects_dir, project_key, session_id)
    # only read: a shared lock on the file keeps writers out (under any name of its folder), not other readers
    held = resolve_target(projects_dir, path=main, access="read") if os.path.lexists(main) else None
    with admit(session_id, config_dir=config_dir_of(Path(projects_dir)), register=False, transcript=held, shared=True):
        return await _push_streams(store, projects_dir, project_key, session_id)


async def _push_streams(store: Any, projects_dir: Path, project_key: str, session_id: str) -> int:
    taken = 0
    for subpath, path in local_streams(projects_dir, project_key, session_id).items():
        key = _key(project_key, session_id, subpath)
        local = file_rows(path)
        stored = await _stored_rows(store, key)
        n = shared_start(stored, local)
        if n == 0 and stored and local:
            raise StoreDiverged(f"{path} and the store's {project_key}/{session_id} share no first row; nothing sent")
        rows = unsent(stored, local[n:], n)
        if not rows:
            continue
        before = len(await store.load(key) or [])
        await store.append(key, rows)
        taken += len(await store.load(key) or []) - before
    return taken


async def bring_local(store: Any, projects_dir: Path, project_key: str, session_id: str) -> Path:
    """The local copy of a store session, made or brought up to date; returns its main transcript.

    No copy: the session's files are written as the SDK writes them. A copy that is a start of the
    store's rows gets the rest appended, under the session's writer lock (a session another writer
    holds is left alone: `InUse`). A copy holding rows the store lacks, or other rows, is not touched:
    `StoreDiverged` says which (push or move it first)."""
    projects_dir = Path(projects_dir)
    main = local_main(projects_dir, project_key, session_id)
    session = await load_session(store, project_key, session_id)
    if not os.path.lexists(main):
        return write_session(projects_dir, session)  # marked as it is written
    mark_from_store(projects_dir, session_id)  # a copy made before marks existed too
    decided = resolve_target(projects_dir, path=main, access="write")  # the file is locked too, as it is appended
    with admit(session_id, config_dir=config_dir_of(projects_dir), register=False, transcript=decided):
        _catch_up(projects_dir, session, main)
    return main


def _catch_up(projects_dir: Path, session: Any, main: Path) -> None:
    """Append to the existing local copy what the store gained since (see `bring_local`)."""
    session_id = session.session_id
    streams: dict[str | None, list[Any]] = {None: session.entries}
    streams.update((sub, split_agent_metadata(rows)[1]) for sub, rows in session.subkeys.items())
    behind: dict[Path, list[Any]] = {}
    for subpath, rows in streams.items():
        if subpath is not None and not safe_subpath(subpath):
            raise InvalidArgument(f"unsafe subpath {subpath!r} in the store")
        path = main if subpath is None else main.parent / session_id / f"{subpath}.jsonl"
        if not os.path.lexists(path):
            continue
        path = resolve_target(projects_dir, path=path, access="write" if subpath is None else "read")
        local = file_rows(path)
        n = shared_start(rows, local)
        if n < len(local):
            if not unsent(rows, local[n:], n):
                raise StoreDiverged(
                    f"the local copy {path} holds the store's rows in another order from row {n + 1} (another "
                    "writer appended while the copy was ahead); nothing is lost by moving it away, then the "
                    "store's order is written in its place"
                )
            what = "rows the store lacks" if n == len(rows) else f"other rows than the store from row {n + 1}"
            raise StoreDiverged(
                f"the local copy {path} holds {what}; push it (session-lsp push {session_id} --store URL) "
                "or move it away first"
            )
        if n < len(rows):
            behind[path] = rows[n:]
    missing = {projects_dir / rel: data for rel, data in session_files(session).items()}
    write_files(projects_dir, {p: data for p, data in missing.items() if not p.exists()})
    for path, rows in behind.items():
        append_lines(path, jsonl_bytes(rows), create=False)  # read above: never made again if it went since
