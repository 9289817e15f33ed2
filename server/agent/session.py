"""Opening the session a turn writes to: a new one, a resumed one, the latest (`--continue`) or
a fork. Each request of the turn reads the conversation from the file (`storage.resume`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from server.agent.request import TurnRequest
from storage.fork import fork_session
from storage.lookup import SessionNotFound, find_by_id, find_continue, resolve_session
from storage.paths import UUID_RE, candidate_project_dirs, default_projects_dir, resolve_cwd
from storage.recorder import SessionRecorder


@dataclass
class OpenSession:
    recorder: SessionRecorder
    cwd: Path
    resumed: bool
    forked_from: str | None = None


def find_session(projects_dir: Path, ref: str, cwd: str | None) -> Path:
    """An id (first in cwd's project folder, as the CLI looks, then anywhere), a path or a title."""
    if UUID_RE.match(ref) and cwd:
        for folder in candidate_project_dirs(projects_dir, resolve_cwd(cwd)):
            if (folder / f"{ref}.jsonl").is_file():
                return folder / f"{ref}.jsonl"
    if UUID_RE.match(ref):
        return find_by_id(projects_dir, ref)
    return resolve_session(projects_dir, ref, cwd)


def open_session(request: TurnRequest, *, fsync: bool = False) -> OpenSession:
    projects = Path(request.projects_dir or default_projects_dir()).expanduser()
    cwd = request.cwd
    mode = request.mode
    if mode == "auto":
        mode = "resume" if request.session else "new"
    if mode == "new":
        real = resolve_cwd(cwd or ".")
        if not Path(real).is_dir():
            raise SessionNotFound(f"working directory does not exist: {real}")
        rec = SessionRecorder.create(projects, real, fsync=fsync, config_dir=projects.parent)
        return OpenSession(rec, Path(real), resumed=False)
    if mode == "continue":
        path = find_continue(projects, resolve_cwd(cwd or "."))
    elif not request.session:
        raise SessionNotFound(f"mode {mode} needs a session id, path or title")
    else:
        path = find_session(projects, request.session, cwd)
    forked_from = None
    if mode == "fork":
        forked_from = path.stem
        _, path = fork_session(path, fsync=fsync)
    rec = SessionRecorder.adopt(path, fsync=fsync, config_dir=projects.parent)
    work = Path(resolve_cwd(cwd)) if cwd else Path(rec.cwd)
    return OpenSession(rec, work, resumed=True, forked_from=forked_from)
