"""The `sessions/*` requests as plain methods: validate parameters, answer with JSON-ready data.

A bad parameter raises `InvalidRequest` with a message meant for the person; the server turns it
into a JSON-RPC InvalidParams error and keeps serving.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from server.features.tree import TreeView
from storage.indexedlist import list_sessions_indexed
from storage.lookup import SessionNotFound, find_by_id
from storage.paths import UUID_RE, candidate_project_dirs, resolve_cwd
from storage.resume import NotATranscript, resume
from storage.sessions import SessionInfo, list_sessions
from storage.transcript import Transcript


class InvalidRequest(ValueError):
    """The request's parameters are wrong; the message says how."""


def _str_param(params: dict[str, Any], name: str, *, required: bool = True) -> str | None:
    value = params.get(name)
    if value is None:
        if required:
            raise InvalidRequest(f"missing parameter {name!r}")
        return None
    if not isinstance(value, str) or not value:
        raise InvalidRequest(f"parameter {name!r} must be a non-empty string")
    return value


class SessionRequests:
    """Answers the custom requests over one projects folder."""

    def __init__(
        self,
        projects_dir: Path,
        transcript_of: Callable[[Path], Transcript] | None = None,
        find_uuid: Callable[[str], list[tuple[Path, Any]]] | None = None,
    ) -> None:
        self.projects_dir = projects_dir
        self.current_session: str | None = None
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
            sources = [
                by_path[p] for p, _row in self._find_uuid(s.first_uuid) if p != s.path and p in by_path
            ]
            sources = [o for o in sources if (o.started, o.created or "") < (s.started, s.created or "")]
            if sources:
                source = min(sources, key=lambda o: (o.started, o.created or ""))
                s.forked_from = {"sessionId": source.session_id, "messageUuid": None}

    # -- lookups -----------------------------------------------------------------------------
    def inside(self, path: Path) -> Path:
        try:
            real = path.expanduser().resolve()
            real.relative_to(self.projects_dir.resolve())
        except (ValueError, OSError) as exc:
            raise InvalidRequest(f"path is outside the projects folder {self.projects_dir}: {path}") from exc
        if not real.is_file():
            raise InvalidRequest(f"no such transcript: {path}")
        return real

    def session_path(self, params: dict[str, Any]) -> Path:
        if params.get("path") is not None:
            return self.inside(Path(_str_param(params, "path") or ""))
        sid = _str_param(params, "sessionId")
        assert sid is not None
        if not UUID_RE.match(sid):
            raise InvalidRequest(f"not a session id: {sid!r}")
        try:
            return find_by_id(self.projects_dir, sid)
        except SessionNotFound as exc:
            raise InvalidRequest(str(exc)) from exc

    # -- requests ----------------------------------------------------------------------------
    def list(self, params: dict[str, Any]) -> dict[str, Any]:
        root = self.projects_dir
        if params.get("projectsDir") is not None:
            root = Path(_str_param(params, "projectsDir") or "").expanduser()
            if not root.is_dir():
                raise InvalidRequest(f"projects folder does not exist: {root}")
        cwd = _str_param(params, "cwd", required=False)
        dirs = candidate_project_dirs(root, resolve_cwd(cwd)) if cwd else None
        sessions = list_sessions_indexed(root, dirs)
        if root == self.projects_dir:
            self._link_forks(sessions)
        return {"sessions": [s.to_json() for s in sessions]}

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
        bare = params.get("bare", False)
        if not isinstance(bare, bool):
            raise InvalidRequest("parameter 'bare' must be true or false")
        try:
            return resume(path, bare=bare, effort_statement=True).to_json()
        except NotATranscript as exc:
            raise InvalidRequest(str(exc)) from exc

    def resume(self, params: dict[str, Any]) -> dict[str, Any]:
        out = self.chain(params)
        self.current_session = out["sessionId"]
        return {k: out[k] for k in ("sessionId", "path", "leafUuid", "messages")}

    def fork(self, params: dict[str, Any]) -> dict[str, Any]:
        from storage.fork import ForkError, fork_session

        path = self.session_path(params)
        at = _str_param(params, "atUuid", required=False)
        title = _str_param(params, "title", required=False)
        try:
            session_id, new_path = fork_session(path, at_uuid=at, title=title)
        except (ForkError, KeyError, ValueError) as exc:
            raise InvalidRequest(str(exc)) from exc
        return {"sessionId": session_id, "path": str(new_path)}
