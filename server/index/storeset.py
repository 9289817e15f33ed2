"""The session stores a server mirrors, and the `session-store:` URIs of their files.

Each store is mirrored (`StoreFeed`) into `<base>/<store id>/`, `base` being a private folder of this
process. The editor never sees those paths: a mirror file is the document
`session-store://<store id>/<project key>/<session id>.jsonl` (subagents below it as on disk), whose
text the server serves (`sessions/storeDocument`), so it is shown read-only.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

from server.index.store import ChangeSet
from server.index.storefeed import SCHEME, StoreFeed, new_mirror_base
from server.index.storesearch import StoreSearch
from storage.paths import is_inside
from storage.store_source import StoreSource


class StoreSet:
    def __init__(self, sources: Iterable[StoreSource], on_change: Callable[[ChangeSet], None] | None = None) -> None:
        sources = list(sources)
        self.base: Path | None = Path(os.path.realpath(new_mirror_base())) if sources else None
        self.feeds = [StoreFeed(s, self.base / s.id, on_change) for s in sources] if self.base else []
        self.search = StoreSearch(self.base) if self.base else None
        """Full-text search over every mirror (`workspace/symbol`); None without stores."""

    def start(self) -> None:
        for feed in self.feeds:
            feed.start()

    def wait_ready(self, timeout: float) -> None:
        for feed in self.feeds:
            feed.ready.wait(timeout)

    def stop(self, grace: float = 0.5) -> None:
        """End every feed (waiting at most `grace` seconds in all) and remove the mirrors."""
        for feed in self.feeds:
            feed.stop()
        deadline = time.monotonic() + grace
        for feed in self.feeds:
            feed.join(max(0.0, deadline - time.monotonic()))
        if self.base is not None:
            shutil.rmtree(self.base, ignore_errors=True)

    def feed_of(self, path: Path) -> StoreFeed | None:
        """The store whose mirror holds `path` (symlinks resolved), if any."""
        if not self.feeds:
            return None
        real = Path(os.path.realpath(path))
        return next((f for f in self.feeds if is_inside(f.root, real)), None)

    def uri_of(self, path: Path) -> str | None:
        feed = self.feed_of(path)
        if feed is None:
            return None
        return feed.uri_of(path)

    def path_of(self, uri: str) -> Path | None:
        """The mirror file of a `session-store:` URI; None for other URIs, unknown stores or `..`."""
        if not uri.startswith(f"{SCHEME}://"):
            return None
        parts = urlsplit(uri)
        names = PurePosixPath(unquote(parts.path)).parts
        if len(names) < 3 or names[0] != "/" or any(n in (".", "..") for n in names):
            return None
        feed = next((f for f in self.feeds if f.source.id == parts.netloc), None)
        return feed.root.joinpath(*names[1:]) if feed is not None else None
