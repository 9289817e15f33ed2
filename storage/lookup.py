"""Finding the session to resume: by id, by exact title, by `.jsonl` path, or `--continue`.

Every path found here passes `storage.access.resolve_target` before it is returned, so a lookup
never leads outside the projects folder or to a file that is not a transcript."""

from __future__ import annotations

from pathlib import Path

from storage.access import Access, resolve_target
from storage.errors import NotFound
from storage.paths import UUID_RE, candidate_project_dirs, iter_session_files, resolve_cwd
from storage.sessions import list_sessions, read_session_info


class SessionNotFound(NotFound):
    """A session could not be found or is ambiguous; the message says why."""


def find_by_id(projects_dir: Path, session_id: str, access: Access = "read") -> Path:
    """`<projects>/<any folder>/<id>.jsonl`."""
    if not UUID_RE.match(session_id):
        raise SessionNotFound(f"not a session id: {session_id!r}")
    try:
        return resolve_target(projects_dir, session_id=session_id, access=access)
    except NotFound as exc:
        raise SessionNotFound(str(exc)) from exc


def find_by_title(projects_dir: Path, title: str, cwd: str | None = None, access: Access = "read") -> Path:
    """Exactly one session whose custom title (else AI title) equals `title`."""
    dirs = candidate_project_dirs(projects_dir, resolve_cwd(cwd)) if cwd else None
    matches = [
        s.path for s in list_sessions(projects_dir, dirs, count=False) if (s.custom_title or s.ai_title) == title
    ]
    if len(matches) == 1:
        return resolve_target(projects_dir, path=matches[0], access=access)
    if not matches:
        raise SessionNotFound(f"no session titled {title!r}")
    raise SessionNotFound(f"{len(matches)} sessions are titled {title!r}; use a session id")


def find_continue(projects_dir: Path, cwd: str, access: Access = "read") -> Path:
    """The most recently modified session of `cwd`'s project folder, skipping sidechain files and
    files with no conversation (1.0.x summary-only and 2.0.x empty files)."""
    real = resolve_cwd(cwd)
    best: tuple[float, Path] | None = None
    for d in candidate_project_dirs(projects_dir, real):
        for f in iter_session_files(d):
            info = read_session_info(f, with_subagents=False, count=False)
            if info.sidechain_start or not info.has_messages:  # no conversation: the CLI skips it too
                continue
            if len(d.name) > 200 and info.cwd and resolve_cwd(info.cwd) != real and info.cwd != real:
                continue
            if best is None or info.modified_ts > best[0]:
                best = (info.modified_ts, f)
    if best is None:
        raise SessionNotFound(f"no session to continue for {real} under {projects_dir}")
    return resolve_target(projects_dir, path=best[1], access=access)


def resolve_session(projects_dir: Path, ref: str, cwd: str | None = None, access: Access = "read") -> Path:
    """A session id, a `.jsonl` path, or an exact title, to its transcript file."""
    if ref.endswith(".jsonl"):
        try:
            return resolve_target(projects_dir, path=ref, access=access)
        except NotFound as exc:
            raise SessionNotFound(str(exc)) from exc
    if UUID_RE.match(ref):
        return find_by_id(projects_dir, ref, access)
    return find_by_title(projects_dir, ref, cwd, access)


__all__ = ["SessionNotFound", "find_by_id", "find_by_title", "find_continue", "resolve_session"]
