"""The `sessions/*` requests as plain methods: validate parameters, answer with JSON-ready data.

A bad parameter raises `InvalidRequest` with a message meant for the person; the server turns it
into a JSON-RPC InvalidParams error and keeps serving.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from server.features.tree import TreeView
from storage.lookup import SessionNotFound, find_by_id
from storage.paths import UUID_RE, candidate_project_dirs, resolve_cwd
from storage.resume import NotATranscript, resume
from storage.sessions import list_sessions
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

    def __init__(self, projects_dir: Path, transcript_of: Callable[[Path], Transcript] | None = None) -> None:
        self.projects_dir = projects_dir
        self.current_session: str | None = None
        self._transcript_of = transcript_of or Transcript.load

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
        return {"sessions": [s.to_json() for s in list_sessions(root, dirs)]}

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
