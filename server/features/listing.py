"""`sessions/list` over the projects folder: whole from the index database, or partial (no file read whole) while
the server's first index is incomplete and the client lists again on `sessions/didChange`. Plain functions over
`storage/`, light enough to answer before the server itself is loaded (`server.lsp.early`)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

from server.params import bool_param, str_param
from storage.errors import OutsideProjects
from storage.paths import candidate_project_dirs, real_root, resolve_cwd
from storage.sessions import SessionInfo

FindUuids = Callable[[Collection[str]], Mapping[str, list[tuple[Path, Any]]]]
"""uuids -> (file, where in it) of every row with each uuid found, all looked up at once."""


def check_projects_dir(root: Path, params: dict[str, Any]) -> None:
    """A `projectsDir` parameter may only name the server's own projects folder."""
    given = str_param(params, "projectsDir", required=False)
    if given is not None and real_root(given) != real_root(root):
        raise OutsideProjects(f"this server serves the projects folder {root}, not {given}")


def wants_partial(params: dict[str, Any]) -> bool:
    """The client takes a partial answer (it lists again when told the index changed)."""
    return bool_param(params, "partial")


def folder_listing(
    root: Path, params: dict[str, Any], *, complete: bool, find_uuids: FindUuids | None
) -> dict[str, Any]:
    """The sessions of the folder (of `cwd`'s project folders if given), newest first: `{"sessions": [...]}`, and
    `partial` when the client takes partial answers. Partial items only while the index is not `complete`."""
    cwd = str_param(params, "cwd", required=False)
    dirs = candidate_project_dirs(root, resolve_cwd(cwd)) if cwd else None
    may_be_partial = wants_partial(params)
    partial = False
    if may_be_partial and not complete:
        from storage.partiallist import list_sessions_partial

        heads = list_sessions_partial(root, dirs)
        partial = any(h.partial for h in heads)
        out = [h.to_json() for h in heads]
    else:
        from storage.indexedlist import list_sessions_indexed
        from storage.usagetotals import sessions_usage_indexed

        sessions = list_sessions_indexed(root, dirs)
        if find_uuids is not None:
            link_forks_by_rows(sessions, find_uuids)
        usage = sessions_usage_indexed(sessions)
        out = [{**s.to_json(), "usage": u} for s, u in zip(sessions, usage, strict=True)]
    answer: dict[str, Any] = {"sessions": out}
    if may_be_partial:
        answer["partial"] = partial
    return answer


def link_forks_by_rows(sessions: list[SessionInfo], find_uuids: FindUuids) -> None:
    """With the index at hand, a `--fork-session` copy made after a compaction (which starts at the boundary, not at
    its source's first row) is found by where its first row lives (every session's first row looked up at once)."""
    by_path = {s.path: s for s in sessions}
    unlinked = [s for s in sessions if s.forked_from is None and s.first_uuid]
    found = find_uuids({s.first_uuid for s in unlinked if s.first_uuid}) if unlinked else {}
    for s in unlinked:
        sources = [by_path[p] for p, _row in found.get(s.first_uuid or "", ()) if p != s.path and p in by_path]
        sources = [o for o in sources if (o.started, o.created or "") < (s.started, s.created or "")]
        if sources:
            source = min(sources, key=lambda o: (o.started, o.created or ""))
            s.forked_from = {"sessionId": source.session_id, "messageUuid": None}
