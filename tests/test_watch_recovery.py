"""The live index never goes stale: a projects folder that is missing at start or deleted and made
again while watched (native and polling observers), and files rewritten in place."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest
from conftest import CORPUS
from test_watch_index import wait_for

from server.index import ChangeSet, ProjectIndex
from server.index.watcher import IndexWatcher

SHOP = "-Users-me-shop"
PAR = "11111111-1111-4111-8111-111111111111"


class Seen:
    def __init__(self) -> None:
        self.changes: list[ChangeSet] = []
        self.lock = threading.Lock()

    def __call__(self, change: ChangeSet) -> None:
        with self.lock:
            self.changes.append(change)

    def roots(self) -> list[str]:
        with self.lock:
            return [c.root for c in self.changes if c.root]


@pytest.mark.parametrize("polling", [False, True])
def test_folder_missing_at_start_then_deleted_and_made_again(tmp_path: Path, polling: bool) -> None:
    projects = tmp_path / "config" / "deeper" / "projects"  # not even its parent exists yet
    idx = ProjectIndex(projects)
    seen = Seen()
    w = IndexWatcher(idx, seen, polling=polling, debounce=0.05, poll_interval=0.1)
    w.start()
    try:
        shutil.copytree(CORPUS / "projects", projects, dirs_exist_ok=True)
        main = projects / SHOP / f"{PAR}.jsonl"
        assert wait_for(lambda: main in idx.files and len(idx.files) == 5)
        with open(main, "ab") as fh:  # watched: an append is followed
            fh.write(b'{"type":"tag","tag":"live","sessionId":"%s"}\n' % PAR.encode())
        assert wait_for(lambda: idx.files[main].offset == main.stat().st_size)

        shutil.rmtree(projects)
        assert wait_for(lambda: not idx.files)
        shutil.copytree(CORPUS / "projects", projects)
        assert wait_for(lambda: len(idx.files) == 5)
        with open(main, "ab") as fh:
            fh.write(b"{broken\n")
        assert wait_for(lambda: [d.code for d in idx.diagnostics(main)] == ["invalid-json"])
        assert wait_for(lambda: "gone" in seen.roots() and seen.roots()[-1] == "back")
        assert w.watching == projects
    finally:
        w.stop()


def _fresh_diagnostics(projects: Path, path: Path) -> list[tuple[int, str]]:
    idx = ProjectIndex(projects)
    idx.scan()
    return [(d.line, d.code) for d in idx.diagnostics(path)]


def _rewrite_in_place(path: Path, data: bytes) -> None:
    ino = path.stat().st_ino
    with open(path, "r+b") as fh:
        fh.truncate(0)
        fh.write(data)
    assert path.stat().st_ino == ino


@pytest.mark.parametrize("how", ["bigger", "same-size"])
def test_rewritten_in_place_is_read_again(corpus_projects: Path, how: str) -> None:
    path = corpus_projects / SHOP / f"{PAR}.jsonl"
    idx = ProjectIndex(corpus_projects)
    idx.scan()
    lines = path.read_bytes().split(b"\n")
    if how == "bigger":  # a garbage line in the middle, and the same rows once more after it
        data = b"\n".join(lines[:20] + [b"{garbage"] + lines[20:])
    else:  # one byte of line 21 broken: same size
        broken = bytearray(lines[20])
        broken[0:1] = b"["
        data = b"\n".join([*lines[:20], bytes(broken), *lines[21:]])
        assert len(data) == path.stat().st_size
    _rewrite_in_place(path, data)
    idx.update_file(path)
    ours = [(d.line, d.code) for d in idx.diagnostics(path)]
    assert ours == _fresh_diagnostics(corpus_projects, path)
    assert ours == [(20, "invalid-json")]
