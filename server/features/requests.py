"""The `sessions/*` requests as plain methods: validate parameters, answer with JSON-ready data.

A bad parameter raises `InvalidArgument` (`server.params`) with a message meant for the person; the server turns it
into a JSON-RPC InvalidParams error and keeps serving.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from server.features.listing import FindUuids, check_projects_dir, folder_listing
from server.features.tree import TreeView
from server.index.storefeed import StoreFeed
from server.params import bool_param, str_param
from storage.access import Access, resolve_target
from storage.errors import InvalidArgument, NotFound, SessionLspError
from storage.paths import candidate_project_dirs, is_inside, resolve_cwd
from storage.resume import resume
from storage.sessions import list_sessions
from storage.store_mirror import MirrorIsReadOnly
from storage.transcript import Transcript
from storage.usage import sessions_usage_json


def iso_time(ts: float | None) -> str | None:
    """Epoch seconds as ISO 8601 UTC with milliseconds (as `modified`), None for None."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class SessionRequests:
    """Answers the custom requests over one projects folder."""

    def __init__(
        self,
        projects_dir: Path,
        transcript_of: Callable[[Path], Transcript] | None = None,
        find_uuids: FindUuids | None = None,
        *,
        stores: Sequence[StoreFeed] = (),
        indexed: Callable[[], bool] | None = None,
    ) -> None:
        self.projects_dir = projects_dir
        self._indexed = indexed
        """Whether the server's first index is complete; None: no index to wait for (answers are always whole)."""
        self._transcript_of = transcript_of or Transcript.load
        self._find_uuids = find_uuids
        self.stores = list(stores)
        """Session stores mirrored read-only: their mirrors are further roots to read from, never to write."""

    # -- lookups -----------------------------------------------------------------------------
    def same_projects_dir(self, params: dict[str, Any]) -> None:
        """A `projectsDir` parameter may only name the server's own projects folder."""
        check_projects_dir(self.projects_dir, params)

    def session_path(self, params: dict[str, Any], access: Access = "read") -> Path:
        """The session named by `path` or `sessionId`, decided by `storage.access`: in the projects
        folder, else (an id found in no local folder, or a path in a mirror) in a store's mirror,
        which is only read: asking to write there raises `MirrorIsReadOnly`."""
        self.same_projects_dir(params)
        path = str_param(params, "path", required=False)
        sid = None if path is not None else str_param(params, "sessionId", required=True)
        if path is not None:
            feed = self.store_of(Path(os.path.abspath(os.path.expanduser(path))))
            if feed is None:
                return resolve_target(self.projects_dir, path=path, access=access)
            found = resolve_target(feed.root, path=path, access="read")
            self._refuse(feed, found, access)
            return found
        try:
            return resolve_target(self.projects_dir, session_id=sid, access=access)
        except NotFound:
            for feed in self.stores:
                try:
                    found = resolve_target(feed.root, session_id=sid, access="read")
                except NotFound:
                    continue
                self._refuse(feed, found, access)
                return found
            raise

    def store_of(self, path: Path) -> StoreFeed | None:
        """The store whose mirror holds `path`, if any."""
        real = Path(os.path.realpath(path))
        return next((f for f in self.stores if is_inside(f.root, real)), None)

    @staticmethod
    def _refuse(feed: StoreFeed, path: Path, access: Access, what: str | None = None) -> None:
        if access == "read" and what is None:
            return
        sid = path.stem
        doing = what or "writing to it"
        raise MirrorIsReadOnly(
            f"session {sid} is held in the session store {feed.source.name} and is read-only here: {doing} "
            f"would write into the store's mirror. Resume it locally first (session-lsp pull {sid} --store URL), "
            "then work on the local copy"
            + (f"; or run the turn in the store itself (store: {feed.source.id!r})" if what == "running a turn" else "")
        )

    def store_turn_target(self, params: dict[str, Any]) -> tuple[StoreFeed, str, str] | None:
        """For `runTurn {sessionId, store}`: the store (by its `storeId` from `sessions/list`), project key
        and session id of a turn to run on the store session itself; None without `store`."""
        store_id = str_param(params, "store", required=False)
        if store_id is None:
            return None
        feed = next((f for f in self.stores if f.source.id == store_id), None)
        if feed is None:
            known = ", ".join(f.source.id for f in self.stores) or "none"
            raise InvalidArgument(f"parameter 'store' names no store of this server ({store_id!r}; stores: {known})")
        if params.get("path") is not None:
            raise InvalidArgument("a turn in a store names its session by 'sessionId', not 'path'")
        sid = str_param(params, "sessionId", required=True)
        if params.get("mode") not in (None, "resume"):
            raise InvalidArgument("a turn in a store resumes its session: parameter 'mode' must be 'resume'")
        found = resolve_target(feed.root, session_id=sid, access="read")
        return feed, found.parent.name, found.stem

    def refuse_store_write(self, params: dict[str, Any], what: str) -> None:
        """Raise `MirrorIsReadOnly` when `sessionId`/`path` name a store session (none of that id locally)."""
        if not self.stores or (params.get("sessionId") is None and params.get("path") is None):
            return
        try:
            path = self.session_path(params)
        except SessionLspError:
            return  # not a session we can read: the request's own checks answer
        feed = self.store_of(path)
        if feed is not None:
            self._refuse(feed, path, "write", what)

    # -- requests ----------------------------------------------------------------------------
    def list(self, params: dict[str, Any]) -> dict[str, Any]:
        """Every session, newest first. With `partial: true` (a client that lists again on `sessions/didChange`)
        and the first index not complete, no file is read whole: sessions the index database cannot answer by
        `stat` come partial (`storage.headlist`), and the answer's `partial` says whether any did."""
        self.same_projects_dir(params)
        complete = self._indexed is None or self._indexed()
        answer = folder_listing(self.projects_dir, params, complete=complete, find_uuids=self._find_uuids)
        if self.stores:
            cwd = str_param(params, "cwd", required=False)
            for feed in self.stores:
                answer["sessions"].extend(self._store_sessions(feed, cwd))
            answer["stores"] = [
                {"id": f.source.id, "name": f.source.name, "error": f.error, "updated": iso_time(f.updated)}
                for f in self.stores
            ]
        return answer

    def _store_sessions(self, feed: StoreFeed, cwd: str | None) -> Sequence[dict[str, Any]]:
        """A store's sessions as `sessions/list` items, with `store` (its name), `storeId` and `readOnly`."""
        if not feed.root.is_dir():
            return []
        dirs = candidate_project_dirs(feed.root, resolve_cwd(cwd)) if cwd else None
        sessions = list_sessions(feed.root, dirs)
        usage = sessions_usage_json(sessions)
        extra = {"store": feed.source.name, "storeId": feed.source.id, "readOnly": True}
        out = []
        for s, u in zip(sessions, usage, strict=True):
            item = {**s.to_json(), "usage": u, "uri": feed.uri_of(s.path), **extra}
            for sub in item["subagents"]:
                sub["uri"] = feed.uri_of(Path(sub["path"]))
            out.append(item)
        return out

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
        from server.features.conversation import DEFAULT_LIMIT, At, conversation

        limit = params.get("limit", DEFAULT_LIMIT)
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise InvalidArgument("parameter 'limit' must be a whole number")
        at_uuid = str_param(params, "atUuid", required=False)
        at_line = params.get("atLine")
        if at_line is not None and (isinstance(at_line, bool) or not isinstance(at_line, int) or at_line < 0):
            raise InvalidArgument("parameter 'atLine' must be a line number from 0")
        if at_uuid is not None and at_line is not None:
            raise InvalidArgument("give either 'atUuid' or 'atLine', not both")
        at = At(at_uuid, at_line) if at_uuid is not None or at_line is not None else None
        path = self.session_path(params)
        return conversation(
            path,
            transcript=self._transcript_of(path),
            leaf_uuid=str_param(params, "leafUuid", required=False),
            limit=limit,
            before=str_param(params, "before", required=False),
            api_form=bool_param(params, "apiForm"),
            at=at,
        )

    def fork(self, params: dict[str, Any]) -> dict[str, Any]:
        from storage.fork import fork_session

        path = self.session_path(params)
        feed = self.store_of(path)
        if feed is not None:
            self._refuse(feed, path, "write", "forking it (the fork goes beside its source)")
        at = str_param(params, "atUuid", required=False)
        title = str_param(params, "title", required=False)
        session_id, new_path = fork_session(path, self.projects_dir, at_uuid=at, title=title)
        return {"sessionId": session_id, "path": str(new_path)}
