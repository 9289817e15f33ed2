"""Workspace symbols: sessions whose title or prompts match, then the messages that match (full-text
search, `storage.search`), each a place to open."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from storage.indexedlist import list_sessions_indexed
from storage.search import SearchIndex

MAX_MESSAGES = 100


@dataclass(frozen=True)
class Symbol:
    name: str
    is_session: bool
    """A session (its file) or one message in it."""
    path: Path
    line: int
    container: str | None


def workspace_symbols(projects_dir: Path, query: str, search: SearchIndex | None) -> list[Symbol]:
    """Sessions matching `query`, then messages from `search` (already caught up with the folder)."""
    needle = query.lower()
    out = []
    for s in list_sessions_indexed(projects_dir):
        haystack = " ".join(filter(None, [s.title, s.first_prompt, s.last_prompt, s.session_id])).lower()
        if not needle or needle in haystack:
            out.append(Symbol(s.title or s.session_id, True, s.path, 0, s.cwd))
    if search is not None and query.strip():
        for hit in search.search(query, MAX_MESSAGES, projects_dir=projects_dir):
            name = f"{hit.kind}: {' '.join(hit.snippet.split())}"
            out.append(Symbol(name, False, Path(hit.path), hit.line, hit.session_id))
    return out
