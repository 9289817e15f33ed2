"""The command line run as `nobody` (tests/nobody.py) over a copy of the corpus it owns: the permission checks root
never meets. An unreadable session file is said and the rest listed and chained; a folder on the way that may be
searched but not read (0711) stops nothing; a cache folder owned by root is not used, said once."""

from __future__ import annotations

import json
import os
import shutil
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import CORPUS
from nobody import NOBODY, give, run_cli, shared_dir

SHOP = "-Users-me-shop"
LOCKED = "-Users-me-other/1c99f271-c426-49f7-9ae1-2b8728ab22c4.jsonl"
MARK = {"kept-output-mark": True}
READABLE = ("11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222")


@pytest.fixture
def shared() -> Iterator[Path]:
    yield from shared_dir()


def lay_out(shared: Path, way_mode: int = 0o755) -> tuple[Path, Path]:
    """(home, projects): nobody's home, and its copy of the corpus below `shared/way` (root's, `way_mode`)."""
    home = shared / "home"
    home.mkdir()
    give(home)
    way = shared / "way"
    way.mkdir()
    projects = way / "projects"
    shutil.copytree(CORPUS / "projects", projects)
    give(projects)
    way.chmod(way_mode)
    return home, projects


def listed(stdout: bytes) -> list[str]:
    return sorted(s["sessionId"] for s in json.loads(stdout))


def test_an_unreadable_session_is_said_and_the_rest_listed_and_chained(shared: Path) -> None:
    home, projects = lay_out(shared)
    (projects / LOCKED).chmod(0o000)
    said = f"{projects / LOCKED} not listed (Permission denied)".encode()
    for _ in range(2):  # the second run is not answered from an output kept without it
        done = run_cli(["list", "--json", "--projects-dir", str(projects)], home)
        assert done.returncode == 0, done.stderr
        assert len(listed(done.stdout)) == 3 and LOCKED.split("/")[1][:-6] not in listed(done.stdout)
        assert done.stderr.count(said) == 1, done.stderr
    table = run_cli(["list", "--projects-dir", str(projects)], home)
    assert table.returncode == 0 and table.stderr.count(said) == 1, table.stderr
    assert all(sid.encode() in table.stdout for sid in READABLE)
    chained = run_cli(["chain", READABLE[0], "--projects-dir", str(projects), "--json"], home)
    assert chained.returncode == 0, chained.stderr
    assert json.loads(chained.stdout)["messages"]
    locked = run_cli(["chain", str(projects / LOCKED), "--projects-dir", str(projects)], home)
    assert locked.returncode != 0 and not locked.stdout
    assert f"cannot read {projects / LOCKED}: Permission denied".encode() in locked.stderr, locked.stderr
    assert b"Traceback" not in locked.stderr


def test_a_folder_searched_but_not_read_on_the_way_stops_nothing(shared: Path) -> None:
    home, projects = lay_out(shared, way_mode=0o711)
    done = run_cli(["list", "--json", "--projects-dir", str(projects)], home)
    assert done.returncode == 0, done.stderr
    assert len(listed(done.stdout)) == 4
    path = projects / SHOP / f"{READABLE[1]}.jsonl"
    chained = run_cli(["chain", str(path), "--projects-dir", str(projects), "--json"], home)
    assert chained.returncode == 0, chained.stderr
    assert json.loads(chained.stdout)["messages"]
    assert stat.S_IMODE(os.stat(projects.parent).st_mode) == 0o711 and os.stat(projects.parent).st_uid == 0


def test_a_cache_folder_owned_by_root_is_not_used(shared: Path) -> None:
    home, projects = lay_out(shared)
    cache = home / ".cache" / "session-lsp"
    cache.mkdir(parents=True)
    os.chown(cache.parent, NOBODY, NOBODY)
    cache.chmod(0o755)  # root's
    done = run_cli(["list", "--json", "--projects-dir", str(projects)], home)
    assert done.returncode == 0, done.stderr
    assert len(listed(done.stdout)) == 4
    said = f"session-lsp: cache folder {cache} not used (it belongs to uid 0); caching is off".encode()
    assert done.stderr.count(said) == 1 and done.stderr.count(b"caching is off") == 1, done.stderr
    assert list(cache.iterdir()) == []


def test_a_session_given_to_another_owner_is_not_listed_from_a_kept_output(shared: Path) -> None:
    """The listing kept while nobody could read every file is not printed once one is root's (same mode, same
    mtime, another ctime)."""
    home, projects = lay_out(shared)
    when = time.time() - 3600
    for p in [projects, *projects.rglob("*")]:
        os.utime(p, (when, when), follow_symlinks=False)
    first = run_cli(["list", "--json", "--projects-dir", str(projects)], home)
    assert first.returncode == 0 and len(listed(first.stdout)) == 4, first.stderr
    [kept] = (home / ".cache" / "session-lsp" / "answers-v1").glob("*.json")
    entry = json.loads(kept.read_bytes())
    entry["result"].append(MARK)  # printed again only if taken from what was kept
    kept.write_text(json.dumps(entry))
    assert run_cli(["list", "--json", "--projects-dir", str(projects)], home).stdout.count(b"kept-output-mark") == 1
    os.chown(projects / LOCKED, 0, 0)  # 0600 still, now root's
    again = run_cli(["list", "--json", "--projects-dir", str(projects)], home)
    assert again.returncode == 0, again.stderr
    assert b"kept-output-mark" not in again.stdout
