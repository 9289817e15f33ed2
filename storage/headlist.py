"""A listing of sessions from the head and tail of each file only: what shows at once on a cold start.

Every field a whole listing (`storage.sessions.list_sessions`) takes from a file's first and last 64 KiB is the
same here: id, project, path, size, mtime, title, first prompt, cwd, created, leaf, branch, tag, subagents. What
needs the whole file is left pending, as None, and named in `pending`: the message count (unless `known` gives
the file's whole summary, as the index database does for a file it holds unchanged), the usage, and `forkedFrom`
when the heads did not decide it (a copy made after a compaction, or one found only through where its first row
lives, needs the whole of other files).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from storage.paths import iter_project_dirs, iter_session_files
from storage.sessions import SessionInfo, attach_legacy_agents, link_by_first_row, read_session_info
from storage.unlisted import unlisted

WHOLE_FILE_FIELDS = ("messageCount", "usage")
"""`sessions/list` fields that need every byte of a session's files."""
Known = Callable[[Path, os.stat_result], SessionInfo | None]
"""A session file's whole summary (its message count counted), when known without reading it; else None."""


@dataclass
class HeadSession:
    """One listed session, with the names of its fields not known yet."""

    info: SessionInfo
    usage: dict[str, Any] | None = None
    pending: list[str] = field(default_factory=list)

    @property
    def partial(self) -> bool:
        return bool(self.pending)

    def to_json(self) -> dict[str, Any]:
        """The `sessions/list` item: pending fields are null, and a partial item says so (`partial`, `pending`)."""
        out = {**self.info.to_json(), "usage": self.usage}
        for name in self.pending:
            out[name] = None
        out["partial"] = self.partial
        if self.pending:
            out["pending"] = list(self.pending)
        return out


def list_heads(
    projects_dir: Path, project_dirs: Iterable[Path] | None = None, *, known: Known | None = None
) -> list[HeadSession]:
    """Every session under `projects_dir` (or only in `project_dirs`), newest first, read from heads and tails
    (or taken from `known`)."""
    dirs = list(project_dirs) if project_dirs is not None else list(iter_project_dirs(projects_dir))
    infos: list[SessionInfo] = []
    counted: set[Path] = set()
    for d in dirs:
        in_dir: list[SessionInfo] = []
        for path in iter_session_files(d):
            try:
                info = known(path, os.stat(path)) if known is not None else None
                if info is not None:
                    counted.add(path)
                else:
                    info = read_session_info(path, count=False)
            except OSError as exc:
                unlisted(path, exc)
                continue
            if info.has_messages:  # as the whole listing: a file with no conversation is no session
                in_dir.append(info)
        attach_legacy_agents(d, in_dir)
        infos.extend(in_dir)
    link_by_first_row(infos)
    infos.sort(key=lambda s: s.modified_ts, reverse=True)
    out = []
    for info in infos:
        pending = [f for f in WHOLE_FILE_FIELDS if f != "messageCount" or info.path not in counted]
        if info.forked_from is None:
            pending.append("forkedFrom")
        out.append(HeadSession(info, pending=pending))
    return out
