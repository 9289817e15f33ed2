"""Opening the session a turn writes to: a new one, a resumed one, the latest (`--continue`) or
a fork. Each request of the turn reads the conversation from the file (`storage.resume`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from server.agent.request import TurnRequest
from storage.access import resolve_target
from storage.errors import InvalidArgument, NotFound, Unsafe
from storage.fork import fork_session
from storage.lookup import find_continue, resolve_session
from storage.paths import (
    UUID_RE,
    candidate_project_dirs,
    config_home,
    decodable,
    default_projects_dir,
    is_inside,
    real_root,
    resolve_cwd,
)
from storage.recorder import SessionRecorder
from storage.sessions import read_session_info
from storage.storeorigin import from_store


@dataclass
class OpenSession:
    recorder: SessionRecorder
    cwd: Path
    resumed: bool
    forked_from: str | None = None


def find_session(projects_dir: Path, ref: str, cwd: str | None) -> Path:
    """An id (first in cwd's project folder, as the CLI looks, then anywhere), a path or a title,
    to a session file we may append to (`storage.access`)."""
    if UUID_RE.match(ref) and cwd:
        for folder in candidate_project_dirs(projects_dir, resolve_cwd(cwd)):
            if os.path.lexists(folder / f"{ref}.jsonl"):
                return resolve_target(projects_dir, path=folder / f"{ref}.jsonl", access="write")
    return resolve_session(projects_dir, ref, cwd, access="write")


def sandbox_root(cwd: str | None, recorded: str, *, config: Path | None = None) -> Path:
    """The folder a turn's tools are confined to: `cwd` when the client gave one, else the
    session's recorded cwd (data of the transcript), which may not be too wide to be implied: `/`,
    the home folder or a folder holding it, nor the config home (`config`, else the default one:
    credentials and every transcript), a folder inside it or a folder holding it (a config home outside the home
    folder, `CLAUDE_CONFIG_DIR=/data/claude`, is reached from `/data`)."""
    if cwd is not None:
        root = Path(resolve_cwd(cwd))
    else:
        root = Path(resolve_cwd(recorded))
        home = Path(resolve_cwd(os.path.expanduser("~")))
        homes = {real_root(config_home()), *([real_root(config)] if config is not None else [])}
        if root == home or root in home.parents or any(is_inside(c, root) or is_inside(root, c) for c in homes):
            raise Unsafe(
                f"the session's working directory is {root}; a turn's tools would reach all of it "
                "(the home folder, the config home with its credentials and transcripts, or more). "
                "Pass cwd explicitly to allow that, or a narrower folder"
            )
    if cwd is not None and not root.is_dir():
        raise NotFound(f"working directory does not exist: {root}")
    return root  # a resumed session's recorded folder may be gone: its tools then find nothing


def not_from_store(projects: Path, path: Path) -> None:
    """Refuse to root a turn at the recorded cwd of a session written from a session store
    (`storage.storeorigin`): whoever can write to the store wrote that cwd."""
    if from_store(projects, path.stem):
        raise Unsafe(
            f"session {path.stem} was written from a session store, and the working directory it records was "
            "written by whoever can write to the store; it is never the root of a turn's tools: pass cwd, "
            "a folder of yours"
        )


def open_session(request: TurnRequest, *, fsync: bool = False) -> OpenSession:
    projects = Path(request.projects_dir or default_projects_dir()).expanduser()
    cwd = request.cwd
    given = resolve_cwd(cwd or ".")
    if not decodable(given):  # before a lock is taken: a registry entry cannot name it
        where = os.fsencode(given)
        raise InvalidArgument(f"the working directory {where!r} is not valid UTF-8; a transcript cannot record it")
    mode = request.mode
    if mode == "auto":
        mode = "resume" if request.session else "new"
    if mode == "new":
        work = sandbox_root(cwd, ".")
        rec = SessionRecorder.create(projects, str(work), fsync=fsync, config_dir=projects.parent)
        return OpenSession(rec, work, resumed=False)
    if mode == "continue":
        path = find_continue(projects, given, access="write")
    elif not request.session:
        raise InvalidArgument(f"mode {mode} needs a session id, path or title")
    else:
        path = find_session(projects, request.session, cwd)
    if cwd is None:
        not_from_store(projects, path)
    forked_from = None
    if mode == "fork":
        recorded = read_session_info(path, with_subagents=False, count=False).cwd or "."
        sandbox_root(cwd, recorded, config=projects.parent)  # before writing
        forked_from = path.stem
        _, path = fork_session(path, projects, fsync=fsync)
    rec = SessionRecorder.adopt(path, fsync=fsync, config_dir=projects.parent)
    try:
        work = sandbox_root(cwd, rec.cwd, config=projects.parent)
    except BaseException:
        rec.abandon()
        raise
    return OpenSession(rec, work, resumed=True, forked_from=forked_from)
