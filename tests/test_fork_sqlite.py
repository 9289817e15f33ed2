"""A worker forked from a process with other threads never opens SQLite (`storage.sqliteopen`): such a worker could
inherit a SQLite mutex held by another thread at the fork, and hang for ever, and its parent with it. CI once stopped
for 90 minutes in `check_folder`, whose workers opened the index database while the first index stored its listing
on a thread of its own."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from storage.indexdb import IndexDB
from storage.search import SearchIndex
from storage.sqliteopen import ForkedWorker

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus" / "claude-code-2.1.328" / "projects"


def _in_worker(folder: str) -> str:
    try:
        SearchIndex.open(Path(folder))
    except ForkedWorker:
        search = "refused"
    else:
        search = "opened"
    return f"{IndexDB.open(Path(folder))} {search}"


def test_a_forked_worker_opens_no_database(tmp_path: Path) -> None:
    db = IndexDB.open(tmp_path)
    assert db is not None  # this process may
    db.close()
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.apply(_in_worker, (str(tmp_path),)) == "None refused"
    search = SearchIndex.open(tmp_path)  # and still may after forking
    search.close()


LOOP = """
import faulthandler, os, shutil, sys
from pathlib import Path
from server.index import ProjectIndex
from server.index.parallel import check_folder
src, base, runs = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
for n in range(runs):
    os.environ["XDG_CACHE_HOME"] = str(base / str(n) / "cache")
    shutil.copytree(src, base / str(n) / "projects")
    faulthandler.dump_traceback_later(60, exit=True)  # a hang ends the run, with every thread's stack
    ProjectIndex(base / str(n) / "projects").scan()  # stores its listing on a thread of its own, forking workers
    diags, files = check_folder(base / str(n) / "projects", workers=2)  # forks while that thread may be in SQLite
    faulthandler.cancel_dump_traceback_later()
    assert files == 5, files
print("done", runs)
"""


@pytest.mark.slow
def test_check_folder_forks_while_the_first_index_stores_its_listing(tmp_path: Path) -> None:
    """Before, 2 of 3 runs of this loop hung within 60 rounds (a worker waited in `sqlite3.connect`)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", LOOP, str(CORPUS), str(tmp_path / "runs"), "200"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=600)
    finally:  # a hung worker outlives its parent: end the whole session
        subprocess.run(["pkill", "-KILL", "-s", str(proc.pid)], check=False)
        shutil.rmtree(tmp_path / "runs", ignore_errors=True)
    assert proc.returncode == 0, err.decode(errors="replace")[-3000:]
    assert out.decode().split() == ["done", "200"]
