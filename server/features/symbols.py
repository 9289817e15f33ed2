"""Workspace symbols: sessions whose title or prompts match, then the messages that match (full-text
search, `storage.search`), each a place to open; the local folder's first, then the session stores'."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from storage.indexedlist import list_sessions_indexed
from storage.search import SearchIndex
from storage.sessions import SessionInfo, list_sessions

MAX_MESSAGES = 100


@dataclass(frozen=True)
class Symbol:
    name: str
    is_session: bool
    """A session (its file) or one message in it."""
    path: Path
    line: int
    container: str | None


def _matching_sessions(sessions: Iterable[SessionInfo], needle: str) -> list[Symbol]:
    out = []
    for s in sessions:
        haystack = " ".join(filter(None, [s.title, s.first_prompt, s.last_prompt, s.session_id])).lower()
        if not needle or needle in haystack:
            out.append(Symbol(s.title or s.session_id, True, s.path, 0, s.cwd))
    return out


def _matching_messages(search: SearchIndex, query: str, root: Path) -> list[Symbol]:
    return [
        Symbol(f"{hit.kind}: {' '.join(hit.snippet.split())}", False, Path(hit.path), hit.line, hit.session_id)
        for hit in search.search(query, MAX_MESSAGES, projects_dir=root)
    ]


def workspace_symbols(
    projects_dir: Path,
    query: str,
    search: SearchIndex | None,
    store_roots: Sequence[Path] = (),
    store_search: SearchIndex | None = None,
) -> list[Symbol]:
    """Sessions matching `query`, then messages from `search` (already caught up with the folder); the
    same for each store mirror in `store_roots`, its messages from `store_search` (caught up too)."""
    needle = query.lower()
    out = _matching_sessions(list_sessions_indexed(projects_dir), needle)
    for root in store_roots:
        if root.is_dir():
            out.extend(_matching_sessions(list_sessions(root, count=False), needle))
    if query.strip():
        if search is not None:
            out.extend(_matching_messages(search, query, projects_dir))
        if store_search is not None:
            for root in store_roots:
                out.extend(_matching_messages(store_search, query, root))
    return out
