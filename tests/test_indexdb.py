"""The persistent index (SQLite in the cache folder): `list` and `check` give what a fresh read gives,
re-read only files whose identity changed, rebuild a damaged or old-schema database, and keep it private."""

from __future__ import annotations

import builtins
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from server.index import ProjectIndex
from server.index.parallel import check_folder
from server.index.persisted import check_folder_indexed
from storage.indexdb import DB_NAME, FILLS, SCHEMA_VERSION, IndexDB
from storage.indexedlist import list_sessions_indexed
from storage.sessions import list_sessions

CORPUS = Path(__file__).resolve().parent / "corpus" / "claude-code-2.1.328" / "projects"
SHOP = "-Users-me-shop"
PAR = "11111111-1111-4111-8111-111111111111"
AGENT = "22222222-2222-4222-8222-222222222222"
REPO = Path(__file__).resolve().parent.parent
HOUR_AGO = time.time() - 3600


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("SESSION_LSP_NO_CACHE", raising=False)
    return tmp_path / "cache" / "session-lsp"


def age(root: Path, when: float = HOUR_AGO) -> None:
    """Files written an hour ago: settled, so the index may take them as unchanged."""
    for p in root.rglob("*"):
        os.utime(p, (when, when))


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    dest = tmp_path / "projects"
    shutil.copytree(CORPUS, dest)
    damage(dest)
    age(dest)
    return dest


def damage(root: Path) -> None:
    """Problems of several kinds, some across files, so the checks have something to say."""
    par = root / SHOP / f"{PAR}.jsonl"
    lines = par.read_bytes().splitlines(keepends=True)
    lines.insert(3, b"not json\n")
    first = orjson.loads(lines[4])
    lines.append(
        orjson.dumps(
            {
                **first,
                "uuid": "dddddddd-0000-4000-8000-000000000001",
                "parentUuid": "eeeeeeee-0000-4000-8000-00000000dead",
            }
        )
        + b"\n"
    )
    par.write_bytes(b"".join(lines))
    other = root / SHOP / f"{AGENT}.jsonl"
    with open(other, "ab") as fh:  # a parent that lives in another file
        fh.write(
            orjson.dumps(
                {
                    **first,
                    "uuid": "dddddddd-0000-4000-8000-000000000002",
                    "sessionId": AGENT,
                    "parentUuid": "dddddddd-0000-4000-8000-000000000001",
                }
            )
            + b"\n"
        )


def listing(root: Path) -> list[dict]:
    return [s.to_json() for s in list_sessions(root)]


def indexed_listing(root: Path) -> list[dict]:
    return [s.to_json() for s in list_sessions_indexed(root)]


def checked(root: Path) -> list[dict]:
    return [d.to_json() for d in check_folder(root, 1)[0]]


def indexed_checked(root: Path, workers: int = 1) -> list[dict]:
    return [d.to_json() for d in check_folder_indexed(root, workers)[0]]


def test_list_and_check_match_a_fresh_read_cold_and_warm(projects: Path, cache: Path) -> None:
    expected_list, expected_check = listing(projects), checked(projects)
    assert {d["code"] for d in expected_check} >= {"invalid-json", "dangling-parent", "cross-file-parent"}
    for _ in range(2):
        assert indexed_listing(projects) == expected_list
        assert indexed_checked(projects) == expected_check
        assert indexed_checked(projects, workers=2) == expected_check
    with sqlite3.connect(cache / DB_NAME) as conn:
        assert conn.execute("SELECT count(*) FROM files").fetchone()[0] == len(expected_list)
        assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] >= 4
        packed = conn.execute("SELECT sum(length(keys)) / 16 FROM uuid_packs").fetchone()[0]
        assert packed + conn.execute("SELECT count(*) FROM odd_uuids").fetchone()[0] > 100


def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every path this process opens from now on (`os.open` and `open`; SQLite opens its files in C)."""
    seen: list[str] = []
    real_os_open, real_open = os.open, builtins.open

    def os_open(path: Any, *args: Any, **kwargs: Any) -> int:
        seen.append(str(path))
        return real_os_open(path, *args, **kwargs)

    def io_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(builtins, "open", io_open)
    return seen


def test_an_unchanged_identity_is_not_read_again(projects: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file whose stored identity holds (settled, same size, mtime and change time) is taken from the database
    without being opened; a same-size rewrite whose mtime was put back (`touch -r`, `cp -p`) is read again."""
    before_list, before_check = indexed_listing(projects), indexed_checked(projects)
    path = projects / SHOP / f"{AGENT}.jsonl"
    seen = opened(monkeypatch)
    assert indexed_listing(projects) == before_list
    assert indexed_checked(projects) == before_check
    assert str(path) not in seen and seen.count(str(projects / SHOP / f"{PAR}.jsonl")) == 0
    monkeypatch.undo()
    data = path.read_bytes()
    path.write_bytes(b"x" * (len(data) - 1) + b"\n")
    os.utime(path, (HOUR_AGO, HOUR_AGO))  # the mtime put back: the change time still moved
    assert indexed_listing(projects) == listing(projects)
    after = indexed_checked(projects)
    assert after == checked(projects) and after != before_check
    assert any(d["code"] == "invalid-json" and d["path"] == str(path) for d in after)


def test_appends_rewrites_removals_and_new_files(projects: Path, cache: Path) -> None:
    indexed_listing(projects), indexed_checked(projects)
    par = projects / SHOP / f"{PAR}.jsonl"
    last = orjson.loads(par.read_bytes().splitlines()[2])
    with open(par, "ab") as fh:  # an append: counted from the stored offset
        for i in range(3):
            fh.write(orjson.dumps({**last, "uuid": f"aaaaaaaa-0000-4000-8000-00000000000{i}", "type": "user"}) + b"\n")
        fh.write(b'{"type":"custom-title","customTitle":"renamed","sessionId":"' + PAR.encode() + b'"}\n')
    age(projects, HOUR_AGO + 120)
    got = indexed_listing(projects)
    assert got == listing(projects)
    assert next(s for s in got if s["sessionId"] == PAR)["title"] == "renamed"
    assert indexed_checked(projects) == checked(projects)
    agent = projects / SHOP / f"{AGENT}.jsonl"  # a rewrite to a longer file with another head
    agent.write_bytes(b'{"type":"mode","mode":"normal"}\n' + agent.read_bytes())
    (projects / "-Users-me-other").rename(projects / "-Users-me-moved")  # files gone, files new
    age(projects, HOUR_AGO + 240)
    assert indexed_listing(projects) == listing(projects)
    assert indexed_checked(projects) == checked(projects)
    new_sub = projects / SHOP / PAR / "subagents" / "agent-a0123456789abcdef.jsonl"  # a new subagent file
    new_sub.parent.mkdir(parents=True, exist_ok=True)
    new_sub.write_bytes(orjson.dumps({**last, "isSidechain": True, "agentId": "a0123456789abcdef"}) + b"\n")
    age(projects, HOUR_AGO + 360)
    assert indexed_listing(projects) == listing(projects)
    assert any(len(s["subagents"]) for s in indexed_listing(projects) if s["sessionId"] == PAR)
    assert indexed_checked(projects) == checked(projects)


def test_a_recently_modified_file_is_read_again(projects: Path, cache: Path) -> None:
    indexed_listing(projects), indexed_checked(projects)
    path = projects / SHOP / f"{AGENT}.jsonl"
    data = path.read_bytes()
    path.write_bytes(b"x" * (len(data) - 1) + b"\n")  # same size, modified just now: could be the same tick
    assert indexed_listing(projects) == listing(projects)
    assert indexed_checked(projects) == checked(projects)


@pytest.mark.parametrize("how", ["garbage", "truncated", "old-schema", "bad-row"])
def test_a_damaged_or_old_database_is_rebuilt(projects: Path, cache: Path, how: str) -> None:
    expected_list, expected_check = listing(projects), checked(projects)
    indexed_listing(projects), indexed_checked(projects)
    db = cache / DB_NAME
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    if how == "garbage":
        db.write_bytes(b"this is not a database" * 100)
    elif how == "truncated":
        db.write_bytes(db.read_bytes()[:1500])
    elif how == "old-schema":
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE files SET info = NULL, count = 999")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 7}")
    else:
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE files SET info = x'7b7b7b'")
            conn.execute("UPDATE sessions SET report = x'5b5b'")
    for suffix in ("-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    assert indexed_listing(projects) == expected_list
    assert indexed_checked(projects) == expected_check
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("SELECT count(*) FROM files WHERE info IS NOT NULL").fetchone()[0] == len(expected_list)


def test_folder_0700_and_files_0600_under_umask_0(projects: Path, cache: Path) -> None:
    old = os.umask(0)
    try:
        indexed_listing(projects)
        indexed_checked(projects)
    finally:
        os.umask(old)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    made = sorted(cache.glob(DB_NAME + "*"))
    assert made and all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in made), [
        (p, oct(p.stat().st_mode)) for p in made
    ]


def test_no_cache_turns_it_off(projects: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SESSION_LSP_NO_CACHE", "1")
    assert IndexDB.open() is None
    assert indexed_listing(projects) == listing(projects)
    assert indexed_checked(projects) == checked(projects)
    assert not cache.exists()


def test_commands_use_the_index(projects: Path, tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    env.pop("SESSION_LSP_NO_CACHE", None)
    for args in (["list", "--json"], ["check", "--json", "-j", "1"]):
        first = subprocess.run(
            [sys.executable, "-m", "server.cli", *args, "--projects-dir", str(projects)],
            capture_output=True,
            cwd=REPO,
            env=env,
            timeout=120,
        )
        second = subprocess.run(
            [sys.executable, "-m", "server.cli", *args, "--projects-dir", str(projects)],
            capture_output=True,
            cwd=REPO,
            env=env,
            timeout=120,
        )
        assert first.stdout == second.stdout and first.returncode == second.returncode
    assert orjson.loads(first.stdout) == checked(projects)
    with sqlite3.connect(tmp_path / "xdg" / "session-lsp" / DB_NAME) as conn:
        assert conn.execute("SELECT count(*) FROM files").fetchone()[0] == len(listing(projects))
        assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] >= 4


def index_of(root: Path, persist: bool = True) -> ProjectIndex:
    idx = ProjectIndex(root, persist=persist)
    idx.scan()
    return idx


def snapshot(idx: ProjectIndex) -> dict:
    return {
        str(p): (s.transcript.rows, s.transcript.problems, s.read, s.line_marks, s.torn)
        for p, s in sorted(idx.files.items())
    }


def diagnostics_of(idx: ProjectIndex) -> list[dict]:
    return [d.to_json() for d in idx.all_diagnostics()]


def test_the_server_index_restarts_from_the_database(
    projects: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = index_of(projects)
    expected, expected_diags = snapshot(first), diagnostics_of(first)
    first.close()
    seen = opened(monkeypatch)
    second = index_of(projects)
    assert snapshot(second) == expected
    assert diagnostics_of(second) == expected_diags
    assert [p for p in seen if p.endswith(".jsonl")] == []  # every state restored, no transcript opened


def test_the_server_index_reads_appends_from_the_stored_offset_and_rewrites_in_full(
    projects: Path, cache: Path
) -> None:
    index_of(projects).close()
    par = projects / SHOP / f"{PAR}.jsonl"
    last = orjson.loads(par.read_bytes().splitlines()[2])
    with open(par, "ab") as fh:
        fh.write(orjson.dumps({**last, "uuid": "aaaaaaaa-0000-4000-8000-00000000000a"}) + b"\n")
        fh.write(b'{"type":"user","uuid":"torn')
    agent = projects / SHOP / f"{AGENT}.jsonl"
    agent.write_bytes(b'{"type":"mode","mode":"normal"}\n' + agent.read_bytes())
    age(projects, HOUR_AGO + 60)
    warm = index_of(projects)
    fresh = index_of(projects, persist=False)
    assert snapshot(warm) == snapshot(fresh)
    assert diagnostics_of(warm) == diagnostics_of(fresh)
    assert any(d["code"] == "torn-tail" for d in diagnostics_of(warm))
    warm.close()
    with open(par, "ab") as fh:  # the torn tail completed: the restored state reads on from its offset
        fh.write(b'x","parentUuid":null}\n')
    age(projects, HOUR_AGO + 120)
    again = index_of(projects)
    assert snapshot(again) == snapshot(index_of(projects, persist=False))
    assert diagnostics_of(again) == diagnostics_of(index_of(projects, persist=False))


def test_stored_rows_stay_in_the_database_until_needed(projects: Path, cache: Path) -> None:
    cold = index_of(projects)
    expected, expected_diags = snapshot(index_of(projects, persist=False)), diagnostics_of(cold)
    cold.close()
    warm = index_of(projects)
    assert not any(s.loaded for s in warm.files.values())  # restored: identity and offsets only
    assert diagnostics_of(warm) == expected_diags
    loaded = [p for p, s in warm.files.items() if s.loaded]
    assert len(loaded) < len(warm.files)  # stored checks; only files holding looked-up uuids were read
    par = projects / SHOP / f"{PAR}.jsonl"
    assert warm.files[par].transcript.rows == expected[str(par)][0]  # one file, on demand
    assert snapshot(warm) == expected


def test_rows_come_back_from_the_files_when_the_database_is_lost(projects: Path, cache: Path) -> None:
    index_of(projects).close()
    warm = index_of(projects)
    with sqlite3.connect(cache / DB_NAME) as conn:
        conn.execute("DELETE FROM rowsets")
    assert snapshot(warm) == snapshot(index_of(projects, persist=False))
    warm.close()
    again = index_of(projects)
    assert FILLS.wait()  # its listing, read after the index on a connection of its own, is stored: the loss comes after
    for suffix in ("", "-wal", "-shm"):
        Path(str(cache / DB_NAME) + suffix).write_bytes(b"garbage" * 500)
    assert diagnostics_of(again) == diagnostics_of(index_of(projects, persist=False))
    assert snapshot(again) == snapshot(index_of(projects, persist=False))


def test_a_database_held_by_another_process_is_waited_for_then_left_alone(
    projects: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import storage.indexdb

    indexed_listing(projects)
    monkeypatch.setattr(storage.indexdb, "BUSY_MS", 200)
    par = projects / SHOP / f"{PAR}.jsonl"
    with open(par, "ab") as fh:
        fh.write(b'{"type":"custom-title","customTitle":"while locked","sessionId":"' + PAR.encode() + b'"}\n')
    age(projects, HOUR_AGO + 60)
    holder = sqlite3.connect(cache / DB_NAME, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the database
    try:
        assert indexed_listing(projects) == listing(projects)
        assert indexed_checked(projects) == checked(projects)
        idx = index_of(projects)
        assert idx.files[par].loaded  # its state could not be stored: the rows stay in memory
        assert diagnostics_of(idx) == diagnostics_of(index_of(projects, persist=False))
        idx.close()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with sqlite3.connect(cache / DB_NAME) as conn:  # still there, with what was stored before the lock
        assert conn.execute("SELECT count(*) FROM files").fetchone()[0] == len(listing(projects))
    assert indexed_listing(projects) == listing(projects)


def test_threads_reading_stored_rows_at_once_all_get_them(projects: Path, cache: Path) -> None:
    import threading

    index_of(projects).close()
    expected = snapshot(index_of(projects, persist=False))
    warm = index_of(projects)
    assert not any(s.loaded for s in warm.files.values())
    results: list[dict] = []
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def reader() -> None:
        try:
            start.wait()
            results.append({str(p): s.transcript.rows for p, s in sorted(warm.files.items())})
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(8)]
    for t in threads:
        t.start()
    with warm.lock:  # the index's own work goes on meanwhile
        warm.all_diagnostics()
    for t in threads:
        t.join(timeout=60)
    assert not errors and len(results) == 8
    assert all(r == {p: v[0] for p, v in expected.items()} for r in results)


def test_indexes_dropped_without_close_leave_no_open_database(projects: Path, cache: Path) -> None:
    def open_files() -> int:
        return len(os.listdir("/proc/self/fd"))

    index_of(projects).close()
    before = open_files()
    for _ in range(20):
        idx = index_of(projects)
        diagnostics_of(idx)
        idx.files[projects / SHOP / f"{PAR}.jsonl"].transcript  # noqa: B018 - loads rows through the database
        del idx
        list_sessions_indexed(projects)
    assert open_files() <= before + 3
