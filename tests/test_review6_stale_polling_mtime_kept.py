"""The polling server (`polling: true`: network folders, or inotify limits reached) sees a transcript rewritten in
place to the same size with its mtime put back (`touch -r`, a sync tool keeping times).

watchdog's polling snapshot compares each entry's size and mtime only. Before, such a rewrite was never reported:
the server answered `workspace/diagnostic` from the old bytes for as long as it ran (no finding 20 s later, where a
fresh `session-lsp check --json` finds 3). Now the snapshot takes the change time, which any write and any change of
mtime moves, for the mtime.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from conftest import age
from rawlsp import RawServer
from test_review6_stale_overflow import fresh_check, served, wait_indexed

SHOP = "-Users-me-shop"
S1 = "11111111-1111-4111-8111-111111111111"
SETTLE = 20.0
"""A hang detector: polled every second, a server that has not caught up by then never will."""


def test_a_same_size_rewrite_with_its_mtime_put_back_is_polled(corpus_projects: Path) -> None:
    age(corpus_projects)
    session = corpus_projects / SHOP / f"{S1}.jsonl"
    with RawServer() as server:
        server.initialize(corpus_projects, polling=True)
        wait_indexed(server)
        assert served(server) == []

        st = session.stat()
        lines = session.read_bytes().split(b"\n")
        lines[5] = b"[" + lines[5][1:]
        with session.open("r+b") as fh:  # in place: the same inode and size
            fh.write(b"\n".join(lines))
        os.utime(session, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert session.stat()[6:9] == st[6:9]

        want = fresh_check(corpus_projects)
        assert [(line, code) for _, line, code in want] == [
            (4, "unreachable-branch"),
            (5, "invalid-json"),
            (6, "cross-file-parent"),
        ]
        deadline = time.monotonic() + SETTLE
        got = served(server)
        while got != want and time.monotonic() < deadline:
            time.sleep(0.5)
            got = served(server)
        assert got == want
