"""The `sessions/*` requests as plain methods: validate parameters, answer with JSON-ready data.

A bad parameter raises `InvalidArgument` (`server.params`) with a message meant for the person; the server turns it
into a JSON-RPC InvalidParams error and keeps serving.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from server.features.tree import TreeView
from server.params import bool_param, str_param
from storage.access import Access, real_root, resolve_target
from storage.errors import InvalidArgument, OutsideProjects
from storage.indexedlist import list_sessions_indexed
from storage.paths import candidate_project_dirs, resolve_cwd
from storage.resume import resume
from storage.sessions import SessionInfo, list_sessions
from storage.transcript import Transcript
from storage.usagetotals import sessions_usage_indexed


class SessionRequests:
    """Answers the custom requests over one projects folder."""

    def __init__(
        self,
        projects_dir: Path,
        transcript_of: Callable[[Path], Transcript] | None = None,
        find_uuid: Callable[[str], list[tuple[Path, Any]]] | None = None,
    ) -> None:
        self.projects_dir = projects_dir
        self._transcript_of = transcript_of or Transcript.load
        self._find_uuid = find_uuid

    def _link_forks(self, sessions: list[SessionInfo]) -> None:
        """With the index at hand, a `--fork-session` copy made after a compaction (which starts at
        the boundary, not at its source's first row) is found by where its first row lives."""
        if self._find_uuid is None:
            return
        by_path = {s.path: s for s in sessions}
        for s in sessions:
            if s.forked_from is not None or not s.first_uuid:
                continue
            sources = [by_path[p] for p, _row in self._find_uuid(s.first_uuid) if p != s.path and p in by_path]
            sources = [o for o in sources if (o.started, o.created or "") < (s.started, s.created or "")]
            if sources:
                source = min(sources, key=lambda o: (o.started, o.created or ""))
                s.forked_from = {"sessionId": source.session_id, "messageUuid": None}

    # -- lookups -----------------------------------------------------------------------------
    def same_projects_dir(self, params: dict[str, Any]) -> None:
        """A `projectsDir` parameter may only name the server's own projects folder."""
        given = str_param(params, "projectsDir", required=False)
        if given is not None and real_root(given) != real_root(self.projects_dir):
            raise OutsideProjects(f"this server serves the projects folder {self.projects_dir}, not {given}")

    def session_path(self, params: dict[str, Any], access: Access = "read") -> Path:
        """The session named by `path` or `sessionId`, decided by `storage.access`."""
        path = str_param(params, "path", required=False)
        sid = None if path is not None else str_param(params, "sessionId", required=True)
        return resolve_target(self.projects_dir, path=path, session_id=sid, access=access)

    # -- requests ----------------------------------------------------------------------------
    def list(self, params: dict[str, Any]) -> dict[str, Any]:
        self.same_projects_dir(params)
        root = self.projects_dir
        cwd = str_param(params, "cwd", required=False)
        dirs = candidate_project_dirs(root, resolve_cwd(cwd)) if cwd else None
        sessions = list_sessions_indexed(root, dirs)
        self._link_forks(sessions)
        usage = sessions_usage_indexed(sessions)
        return {"sessions": [{**s.to_json(), "usage": u} for s, u in zip(sessions, usage, strict=True)]}

    def tree(self, params: dict[str, Any]) -> dict[str, Any]:
        path = self.session_path(params)
        view = TreeView.of(self._transcript_of(path))
        out = view.to_json()
        sid = out["sessionId"]
        infos = list_sessions(self.projects_dir, [path.parent], count=False)
        out["subagents"] = next((i.subagents for i in infos if i.path == path), [])
        out["forks"] = [
            {"sessionId": i.session_id, "path": str(i.path), "messageUuid": (i.forked_from or {}).get("messageUuid")}
            for i in infos
            if i.forked_from and i.forked_from.get("sessionId") == sid
        ]
        return out

    def chain(self, params: dict[str, Any]) -> dict[str, Any]:
        path = self.session_path(params)
        return resume(path, bare=bool_param(params, "bare"), effort_statement=True).to_json()

    def resume(self, params: dict[str, Any]) -> dict[str, Any]:
        out = self.chain(params)
        return {k: out[k] for k in ("sessionId", "path", "leafUuid", "messages")}

    def conversation(self, params: dict[str, Any]) -> dict[str, Any]:
        from server.features.conversation import DEFAULT_LIMIT, conversation

        limit = params.get("limit", DEFAULT_LIMIT)
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise InvalidArgument("parameter 'limit' must be a whole number")
        path = self.session_path(params)
        return conversation(
            path,
            transcript=self._transcript_of(path),
            leaf_uuid=str_param(params, "leafUuid", required=False),
            limit=limit,
            before=str_param(params, "before", required=False),
            api_form=bool_param(params, "apiForm"),
        )

    def fork(self, params: dict[str, Any]) -> dict[str, Any]:
        from storage.fork import fork_session

        path = self.session_path(params)
        at = str_param(params, "atUuid", required=False)
        title = str_param(params, "title", required=False)
        session_id, new_path = fork_session(path, self.projects_dir, at_uuid=at, title=title)
        return {"sessionId": session_id, "path": str(new_path)}
