"""Full-text search over the session stores' mirrors, for `workspace/symbol`.

The mirrors live only as long as the server, so their search database does too: it sits in the
server's private mirror folder (removed with it, open or not), never in the cache folder beside the local one.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from storage.search import SearchIndex

FOLDER = ".search"
"""The database's folder in the mirror base (a store's mirror is named by its id, never hidden)."""


class StoreSearch:
    """One search database for every mirror, opened on first use; callers serialise the calls."""

    def __init__(self, base: Path) -> None:
        self.folder = base / FOLDER
        self._index: SearchIndex | None = None

    def catch_up(self, roots: Iterable[Path]) -> SearchIndex:
        """The database, with what changed in each mirror folder read in."""
        if self._index is None:
            self._index = SearchIndex.open(self.folder)
        for root in roots:
            if root.is_dir():
                self._index.update(root)
        return self._index
