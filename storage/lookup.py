"""Finding the session to resume: by id, by exact title, by `.jsonl` path, or `--continue`."""

from __future__ import annotations

from pathlib import Path

from storage.paths import (
    UUID_RE,
    candidate_project_dirs,
    iter_project_dirs,
    iter_session_files,
    resolve_cwd,
)
from storage.sessions import list_sessions, read_session_info


class SessionNotFound(Exception):
    """A session could not be found or is ambiguous; the message says why."""


def find_by_id(projects_dir: Path, session_id: str) -> Path:
    """`<projects>/<any folder>/<id>.jsonl`."""
    if not UUID_RE.match(session_id):
        raise SessionNotFound(f"not a session id: {session_id!r}")
    for d in iter_project_dirs(projects_dir):
        candidate = d / f"{session_id}.jsonl"
        if candidate.is_file():
            return candidate
    raise SessionNotFound(f"no session {session_id} under {projects_dir}")


def find_by_title(projects_dir: Path, title: str, cwd: str | None = None) -> Path:
    """Exactly one session whose custom title (else AI title) equals `title`."""
    dirs = candidate_project_dirs(projects_dir, resolve_cwd(cwd)) if cwd else None
    matches = [
        s.path
        for s in list_sessions(projects_dir, dirs, count=False)
        if (s.custom_title or s.ai_title) == title
    ]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise SessionNotFound(f"no session titled {title!r}")
    raise SessionNotFound(f"{len(matches)} sessions are titled {title!r}; use a session id")


def find_continue(projects_dir: Path, cwd: str) -> Path:
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
    return best[1]


def resolve_session(projects_dir: Path, ref: str, cwd: str | None = None) -> Path:
    """A session id, a `.jsonl` path, or an exact title, to its transcript file."""
    if ref.endswith(".jsonl"):
        p = Path(ref).expanduser()
        if not p.is_file():
            raise SessionNotFound(f"no such file: {ref}")
        return p
    if UUID_RE.match(ref):
        return find_by_id(projects_dir, ref)
    return find_by_title(projects_dir, ref, cwd)


__all__ = ["SessionNotFound", "find_by_id", "find_by_title", "find_continue", "resolve_session"]
