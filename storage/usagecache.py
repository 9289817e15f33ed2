"""Responses of each file kept between runs, so usage reads only what was appended since last time.

Like the message counts (`storage/countcache.py`): each file's entry holds its inode, the byte offset read
to (always the end of a whole line), its responses so far, and the file's size, change time and fingerprint
(head and the bytes before the offset) when it was read. A file that grew on the same inode with the same
fingerprint is read from there; one that shrank, was replaced, or was rewritten in place (another fingerprint,
or the same size with another change time) is read again; an unfinished last line is read every time and never
stored. The cache is `usage-<prices date>-v3.json` beside the counts, so a new price table starts afresh;
`SESSION_LSP_NO_CACHE=1` turns it off. A missing or damaged cache is rebuilt.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from storage.cache import cache_dir, load_json_dict, save_json
from storage.countcache import fingerprint
from storage.prices import PRICES_DATE
from storage.usage import ASSISTANT_MARKER, Response, assistant_lines, merge_response, responses_of_lines

_FIELDS = (
    "message_id",
    "model",
    "timestamp",
    "offset",
    "input_tokens",
    "output_tokens",
    "cache_creation_tokens",
    "cache_read_tokens",
    "cache_1h_tokens",
    "cost_usd",
)


def usage_cache_file() -> Path | None:
    folder = cache_dir()
    return None if folder is None else folder / f"usage-{PRICES_DATE}-v3.json"


def _packed(r: Response) -> list[Any]:
    return [getattr(r, name) for name in _FIELDS]


def _unpacked(values: list[Any], path: Path, parent: Path, session_id: str, agent_id: str | None) -> Response:
    """A stored response; a damaged one raises ValueError or TypeError (the file is then read again)."""
    mid, model, ts, offset, inp, out, writes, reads, one_hour, cost = values
    if not all(type(n) is int for n in (offset, inp, out, writes, reads, one_hour)):
        raise ValueError("damaged cache entry")
    return Response(mid, model, ts, session_id, parent, path, offset, inp, out, writes, reads, one_hour, cost, agent_id)


class UsageCache:
    """Load once, look up and update many, save once."""

    def __init__(self, where: Path | None = None, *, enabled: bool = True) -> None:
        self.where = (where if where is not None else usage_cache_file()) if enabled else None
        self.entries: dict[str, list[Any]] = load_json_dict(self.where)
        self.dirty = False

    def _stored(
        self, path: Path, st: os.stat_result, session_id: str | None, agent_id: str | None
    ) -> tuple[int, list[Response]]:
        entry = self.entries.get(str(path))
        try:
            ino, offset, packed, size, changed_ns, print_ = entry  # type: ignore[misc]  # None or a bad entry raises TypeError/ValueError, caught below
            if ino != st.st_ino or not (isinstance(offset, int) and 0 <= offset <= st.st_size):
                raise ValueError
            if (size == st.st_size and changed_ns != st.st_ctime_ns) or fingerprint(path, offset) != print_:
                raise ValueError  # rewritten in place
            parent, sid = path.parent, session_id or path.stem
            return offset, [_unpacked(p, path, parent, sid, agent_id) for p in packed]
        except (TypeError, ValueError):
            return 0, []

    def file_responses(self, path: Path, session_id: str | None = None, agent_id: str | None = None) -> list[Response]:
        """Like `storage.usage.file_responses`, reading only bytes not read before."""
        st = path.stat()
        offset, known = self._stored(path, st, session_id, agent_id)
        found = {r.key: r for r in known}
        new_lines, end, tail = assistant_lines(path, offset)
        for r in responses_of_lines(new_lines, path, session_id, agent_id):
            merge_response(found, r)
        if end != offset or str(path) not in self.entries:
            packed = [_packed(r) for r in found.values()]
            self.entries[str(path)] = [st.st_ino, end, packed, st.st_size, st.st_ctime_ns, fingerprint(path, end)]
            self.dirty = True
        if ASSISTANT_MARKER in tail:
            for r in responses_of_lines([(end, tail)], path, session_id, agent_id):
                merge_response(found, r)
        return list(found.values())

    def save(self) -> None:
        if self.where is None or not self.dirty:
            return
        if save_json(self.where, self.entries):
            self.dirty = False
