"""A session's checks are stored only under the identities of the files they were computed from.

A sync tool or an editor replaces a transcript by a copy of the same size with its mtime kept (write a temporary file,
`touch -r`, rename over). A server that has not read the new file yet (its watcher not there yet, or `watch: false`)
computes the session's checks from what it read before. Before, it stored them under the identities the files have
now (only the sizes were compared), so:

- `session-lsp check --json`, which gives the stored checks of a session whose files' identities are unchanged, gave
  the old file's: no finding where a fresh check finds 3 (`invalid-json`, `unreachable-branch`, `cross-file-parent`);
- the polling server, once its watcher read the new file, found the stored checks under its identities and answered
  them: no finding, for as long as it ran, although it had sent `sessions/didChange` for the session.

Now checks are stored only when every file is as it was read (device, inode, size, mtime and change time).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from conftest import age
from rawlsp import RawServer
from test_review6_stale_overflow import fresh_check, served, wait_indexed

SHOP = "-Users-me-shop"
S1 = "11111111-1111-4111-8111-111111111111"
TRIES = 5
SETTLE = 20.0
"""A hang detector: a server that has not caught up by then never will."""


@pytest.fixture(autouse=True)
def _persistent(monkeypatch: pytest.MonkeyPatch) -> None:
    """The index database and kept answers on (this test's own cache folder)."""
    monkeypatch.delenv("SESSION_LSP_NO_CACHE", raising=False)


def replace_keeping_mtime(path: Path, line: int) -> None:
    """Replace `path` by a copy whose `line` (0-based) starts with `[` (the same size), with its mtime, renamed over."""
    lines = path.read_bytes().split(b"\n")
    lines[line] = b"[" + lines[line][1:]
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(b"\n".join(lines))
    st = path.stat()
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.rename(tmp, path)


def test_a_server_that_did_not_read_a_replaced_file_leaves_check_its_findings(corpus_projects: Path) -> None:
    age(corpus_projects)
    session = corpus_projects / SHOP / f"{S1}.jsonl"
    with RawServer() as server:
        server.initialize(corpus_projects, watch=False)
        wait_indexed(server)
        assert server.call("sessions/tree", {"sessionId": S1})["result"]["sessionId"] == S1  # pygls serves
        replace_keeping_mtime(session, 5)
        served(server)  # not watching: computed from the file as it read it (and kept nowhere)
        assert server.call("shutdown")["result"] is None
        server.notify("exit")
        assert server.wait_exit()[0] == 0

    want = fresh_check(corpus_projects)
    assert [(line, code) for _, line, code in want] == [
        (4, "unreachable-branch"),
        (5, "invalid-json"),
        (6, "cross-file-parent"),
    ]
    assert fresh_check(corpus_projects, cached=True) == want


def test_the_polling_server_answers_a_replaced_file_once_it_read_it(corpus_projects: Path) -> None:
    """The file is replaced and the diagnostics asked at once, before the next poll (most of the time: each try that
    was answered from the old file is then checked against the file as it is)."""
    age(corpus_projects)
    session = corpus_projects / SHOP / f"{S1}.jsonl"
    with RawServer() as server:
        server.initialize(corpus_projects, polling=True)
        wait_indexed(server)
        for n in range(TRIES):
            seen = len(server.notifications)
            replace_keeping_mtime(session, 5 + n)
            served(server)
            deadline = time.monotonic() + SETTLE
            while not any(S1 in m.get("params", {}).get("sessionIds", ()) for m in server.notifications[seen:]):
                assert time.monotonic() < deadline, "no sessions/didChange for the replaced session"
                time.sleep(0.05)
            want = fresh_check(corpus_projects)
            assert served(server) == want, f"try {n}"
