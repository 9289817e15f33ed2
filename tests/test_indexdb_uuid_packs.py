"""The uuid tables of the index database: one packed row per file, found by a scan that is exact (uuids sharing a
prefix with a wanted one, or not in the canonical form, never give a wrong answer), stored in one transaction,
and rebuilt from the files when damaged or left by an older schema."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from server.cli import main
from server.index import ProjectIndex
from server.index.persisted import check_folder_indexed
from storage import uuidpack
from storage.indexdb import DB_NAME, SCHEMA_VERSION, IndexDB
from storage.uuidpack import FEW

ROWS = {f"/p/{n}.jsonl": [(f"{n:08x}-0000-4000-8000-{i:012x}", i) for i in range(50)] for n in range(20)}
TARGET = "aaaaaaaa-bbbb-4ccc-8ddd-000000000001"
SAME_FIRST_HALF = "aaaaaaaa-bbbb-4ccc-8ddd-000000000002"
"""Its first 8 bytes are TARGET's: the scan's first comparison matches, the whole key does not."""
SECOND_HALF_IS_FIRST = "8ddd0000-0000-0001-aaaa-aaaabbbb4ccc"
"""Its bytes 6-13 are TARGET's first 8: packed beside another key they straddle a boundary."""
NOWHERE = "aaaaaaaa-bbbb-4ccc-8ddd-000000000003"
STRADDLE = ("11111111-1111-4111-aaaa-aaaabbbb4ccc", "8ddd0000-0000-0003-2222-222222222222")
"""Packed one after the other, NOWHERE's 16 bytes are found across them (8 bytes into the first)."""
HOUR_AGO = time.time() - 3600


@pytest.fixture
def db(tmp_path: Path) -> IndexDB:
    opened = IndexDB.open(tmp_path)
    assert opened is not None
    return opened


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("SESSION_LSP_NO_CACHE", raising=False)
    return tmp_path / "cache" / "session-lsp"


def check_twice(projects: Path, capsys: pytest.CaptureFixture[str]) -> list[list[dict[str, object]]]:
    """`check --json` of `projects` twice: the first run fills the database, the second answers from it."""
    runs = []
    for _ in range(2):
        main(["check", "--json", "-j", "1", "--projects-dir", str(projects)])
        runs.append(orjson.loads(capsys.readouterr().out))
    return runs


def restored_index(projects: Path) -> ProjectIndex:
    """A server index of `projects` restored from the database a first index stored: no file's rows loaded."""
    first = ProjectIndex(projects)
    first.scan()
    first.close()
    again = ProjectIndex(projects)
    again.scan()
    assert not any(s.loaded for s in again.files.values())
    return again


def test_a_file_is_one_packed_row_and_every_uuid_is_found_at_its_line(db: IndexDB) -> None:
    with db.uuid_load():
        for path, ids in ROWS.items():
            db.put_uuids(path, ids)
    assert db.commit()
    assert db.conn.execute("SELECT count(*), sum(length(keys)), sum(length(lines)) FROM uuid_packs").fetchone() == (
        20,
        1000 * 16,
        1000 * 4,
    )
    every = [u for ids in ROWS.values() for u, _ in ids]
    expected = {u: [(path, line)] for path, ids in ROWS.items() for u, line in ids}
    assert db.homes_many(every) == expected
    assert db.homes(every[371]) == [("/p/7.jsonl", 21)]
    db.put_uuids("/p/0.jsonl", [(every[1], 3)])  # replaced, not added to
    assert db.homes(every[0]) == [] and db.homes(every[1]) == [("/p/0.jsonl", 3)]


def test_uuids_sharing_a_prefix_or_not_canonical_are_told_apart(db: IndexDB) -> None:
    db.put_uuids("/p/a.jsonl", [(SAME_FIRST_HALF, 0), ("00000000-0000-4000-8000-000000000000", 1)])
    db.put_uuids("/p/b.jsonl", [(SECOND_HALF_IS_FIRST, 0), (TARGET, 7), ("aaaaaaaa-bbbb", 8)])
    db.put_uuids("/p/c.jsonl", [(TARGET.upper(), 2), ("", 3), (" " + TARGET, 4), (TARGET.replace("-", ""), 5)])
    db.put_uuids("/p/d.jsonl", [(TARGET, 9), (STRADDLE[0], 10), (STRADDLE[1], 11)])
    assert db.commit()
    assert db.homes(TARGET) == [("/p/b.jsonl", 7), ("/p/d.jsonl", 9)]
    assert db.homes(NOWHERE) == []
    many = [TARGET, NOWHERE, *STRADDLE, *(f"{n:08x}-0000-4000-8000-000000000000" for n in range(FEW))]
    assert db.homes_many(many) == {  # past FEW uuids the scan compares first halves, then whole keys
        TARGET: [("/p/b.jsonl", 7), ("/p/d.jsonl", 9)],
        STRADDLE[0]: [("/p/d.jsonl", 10)],
        STRADDLE[1]: [("/p/d.jsonl", 11)],
        "00000000-0000-4000-8000-000000000000": [("/p/a.jsonl", 1)],
    }
    assert db.homes(SAME_FIRST_HALF) == [("/p/a.jsonl", 0)]
    assert db.homes(TARGET.upper()) == [("/p/c.jsonl", 2)]
    assert db.homes_many(["", "aaaaaaaa-bbbb", TARGET.replace("-", ""), " " + TARGET]) == {
        "": [("/p/c.jsonl", 3)],
        "aaaaaaaa-bbbb": [("/p/b.jsonl", 8)],
        TARGET.replace("-", ""): [("/p/c.jsonl", 5)],
        " " + TARGET: [("/p/c.jsonl", 4)],
    }
    assert db.conn.execute("SELECT count(*) FROM odd_uuids").fetchone() == (5,)  # only the non-canonical ones


def test_a_load_is_one_transaction_and_a_failed_one_stores_nothing(db: IndexDB, tmp_path: Path) -> None:
    other = sqlite3.connect(tmp_path / DB_NAME)
    with db.uuid_load():
        for path, ids in ROWS.items():
            db.put_uuids(path, ids)
        assert other.execute("SELECT count(*) FROM uuid_packs").fetchone() == (0,)
    assert db.commit()
    assert other.execute("SELECT count(*) FROM uuid_packs").fetchone() == (20,)
    with pytest.raises(RuntimeError), db.uuid_load():
        db.put_uuids("/p/0.jsonl", [(TARGET, 1)])
        raise RuntimeError("a worker failed")
    db.rollback()
    assert db.homes(TARGET) == [] and db.homes(ROWS["/p/0.jsonl"][5][0]) == [("/p/0.jsonl", 5)]
    db.put_uuids("/p/1.jsonl", [(TARGET, 2)])  # into the packs kept since the lookups above
    assert db.homes(TARGET) == [("/p/1.jsonl", 2)] and db.homes(ROWS["/p/1.jsonl"][0][0]) == []
    db.rollback()
    assert db.homes(TARGET) == [] and db.homes(ROWS["/p/1.jsonl"][0][0]) == [("/p/1.jsonl", 0)]


def test_packs_kept_for_lookups_are_read_again_once_another_connection_commits(db: IndexDB, tmp_path: Path) -> None:
    db.put_uuids("/p/a.jsonl", [(TARGET, 1)])
    assert db.commit()
    assert db.homes(TARGET) == [("/p/a.jsonl", 1)] and db.homes(NOWHERE) == []  # the packs are kept from here
    other = IndexDB.open(tmp_path)  # another process's connection
    assert other is not None
    other.put_uuids("/p/b.jsonl", [(NOWHERE, 2)])
    other.drop_uuids(["/p/a.jsonl"])
    assert db.homes(NOWHERE) == []  # not committed yet
    assert other.commit()
    assert db.homes_many([TARGET, NOWHERE]) == {NOWHERE: [("/p/b.jsonl", 2)]}
    other.close()


def test_a_database_of_the_row_per_uuid_schema_is_rebuilt(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        conn.executescript(
            "CREATE TABLE uuid_files(id INTEGER PRIMARY KEY, path TEXT UNIQUE);"
            "CREATE TABLE uuids(file INTEGER, line INTEGER, uuid TEXT, PRIMARY KEY(file, line, uuid)) WITHOUT ROWID;"
            f"INSERT INTO uuid_files VALUES (1, '/p/old.jsonl'); INSERT INTO uuids VALUES (1, 4, '{TARGET}');"
            "PRAGMA user_version = 6;"
        )
    db = IndexDB.open(tmp_path)
    assert db is not None and SCHEMA_VERSION > 6
    tables = {n for (n,) in db.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "uuids" not in tables and {"uuid_packs", "odd_uuids"} <= tables
    assert db.homes(TARGET) == []


def row(session: str, uuid: str, parent: str | None, n: int) -> bytes:
    return (
        orjson.dumps(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "type": "user",
                "message": {"role": "user", "content": f"prompt {n}"},
                "uuid": uuid,
                "timestamp": f"2026-01-01T00:00:0{n}.000Z",
                "cwd": "/tmp/p",
                "sessionId": session,
            }
        )
        + b"\n"
    )


def colliding_folder(root: Path) -> Path:
    """Two sessions of one project: the second's rows point at a row of the first (its third line), at a uuid that
    shares its first 8 bytes with that row's (in no file, but its bytes are across two keys of the first), and at the uppercase form of a uuid of the first."""
    folder = root / "projects" / "-tmp-p"
    folder.mkdir(parents=True)
    one, two = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"
    first = [
        row(one, "aaaaaaaa-bbbb-4ccc-8ddd-00000000000a", None, 1),
        row(one, SECOND_HALF_IS_FIRST, "aaaaaaaa-bbbb-4ccc-8ddd-00000000000a", 2),
        row(one, TARGET, SECOND_HALF_IS_FIRST, 3),
        row(one, STRADDLE[0], TARGET, 4),
        row(one, STRADDLE[1], STRADDLE[0], 5),
    ]
    second = [
        row(two, "cccccccc-0000-4000-8000-000000000001", TARGET, 6),
        row(two, "cccccccc-0000-4000-8000-000000000002", NOWHERE, 7),
        row(two, "cccccccc-0000-4000-8000-000000000003", "AAAAAAAA-BBBB-4CCC-8DDD-00000000000A", 8),
    ]
    (folder / f"{one}.jsonl").write_bytes(b"".join(first))
    (folder / f"{two}.jsonl").write_bytes(b"".join(second))
    for p in folder.iterdir():
        os.utime(p, (HOUR_AGO, HOUR_AGO))
    return root / "projects"


def link_codes(diags: list[dict]) -> list[tuple[str, int, str]]:
    return sorted((Path(d["path"]).name[:2], d["line"], d["code"]) for d in diags if "parent" in d["code"])


EXPECTED = [("22", 1, "cross-file-parent"), ("22", 2, "dangling-parent"), ("22", 3, "dangling-parent")]
"""(file, 1-based line, code) of the links of the second session."""


def test_links_settled_through_the_packs_are_exact_cold_and_warm(
    tmp_path: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    projects = colliding_folder(tmp_path)
    runs = check_twice(projects, capsys)
    assert (cache / DB_NAME).exists()
    assert [link_codes(r) for r in runs] == [EXPECTED, EXPECTED]
    related = next(d for d in runs[1] if d["code"] == "cross-file-parent")["related"]
    assert [(Path(r["path"]).name[:2], r["line"]) for r in related] == [("11", 3)]
    again = restored_index(projects)
    assert link_codes([d.to_json() for d in again.all_diagnostics()]) == EXPECTED
    assert again.homes_many([TARGET, NOWHERE, SAME_FIRST_HALF]) == {TARGET: [(sorted(again.files)[0], 2)]}
    again.close()


def test_a_damaged_pack_is_rebuilt_from_the_files(tmp_path: Path, cache: Path) -> None:
    projects = colliding_folder(tmp_path)
    expected = check_folder_indexed(projects, workers=1)
    assert link_codes([d.to_json() for d in expected[0]]) == EXPECTED
    with sqlite3.connect(cache / DB_NAME) as conn:
        assert conn.execute("UPDATE uuid_packs SET keys = x'0102030405'").rowcount == 2
    assert check_folder_indexed(projects, workers=1) == expected
    with sqlite3.connect(cache / DB_NAME) as conn:
        assert conn.execute("SELECT sum(length(keys)) FROM uuid_packs").fetchone() == (8 * 16,)


SHORT = TARGET[:-1]
"""35 characters: TARGET without its last one."""
LONG = TARGET[-1] + STRADDLE[0]
"""37 characters: TARGET's last one, then a canonical uuid. Written one after the other, SHORT and LONG are 72
characters with dashes where two canonical uuids have them: TARGET and STRADDLE[0]."""


def test_uuids_of_35_and_37_characters_are_not_packed_as_the_two_they_spell_together(db: IndexDB) -> None:
    db.put_uuids("/p/a.jsonl", [(SHORT, 0), (LONG, 1)])
    assert db.commit()
    assert db.homes_many([SHORT, LONG, TARGET, STRADDLE[0]]) == {
        SHORT: [("/p/a.jsonl", 0)],
        LONG: [("/p/a.jsonl", 1)],
    }
    assert db.conn.execute("SELECT sum(length(keys)) FROM uuid_packs").fetchone() == (0,)


def test_links_to_uuids_of_35_and_37_characters_settle_as_a_reading_of_the_files_does(
    tmp_path: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "projects" / "-tmp-p"
    folder.mkdir(parents=True)
    one, two = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"
    (folder / f"{one}.jsonl").write_bytes(row(one, SHORT, None, 1) + row(one, LONG, SHORT, 2))
    (folder / f"{two}.jsonl").write_bytes(
        row(two, "cccccccc-0000-4000-8000-000000000001", SHORT, 3)
        + row(two, "cccccccc-0000-4000-8000-000000000002", TARGET, 4)
    )
    for p in folder.iterdir():
        os.utime(p, (HOUR_AGO, HOUR_AGO))
    projects = tmp_path / "projects"
    runs = check_twice(projects, capsys)
    expected = [("22", 1, "cross-file-parent"), ("22", 2, "dangling-parent")]
    assert [link_codes(r) for r in runs] == [expected, expected]
    again = restored_index(projects)
    assert link_codes([d.to_json() for d in again.all_diagnostics()]) == expected
    assert again.homes_many([SHORT, LONG, TARGET, STRADDLE[0]]) == {
        SHORT: [(folder / f"{one}.jsonl", 0)],
        LONG: [(folder / f"{one}.jsonl", 1)],
    }
    again.close()


def test_a_commit_between_the_scan_and_the_paths_gives_neither_another_files_path_nor_damage(
    db: IndexDB, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db.put_uuids("/p/a.jsonl", [(TARGET, 1)])
    db.put_uuids("/p/b.jsonl", [(NOWHERE, 2)])  # file id 2, the highest: SQLite gives it again once it is dropped
    assert db.commit()
    assert db.homes(TARGET) == [("/p/a.jsonl", 1)]  # the packs are kept from here
    other = IndexDB.open(tmp_path)  # another process's connection
    assert other is not None
    scan = uuidpack.Packs.find
    commits: list[str] = []

    def scan_then_other_commits(packs: uuidpack.Packs, wanted: uuidpack.Wanted) -> list[tuple[str, int, int]]:
        hits = list(scan(packs, wanted))
        if not commits:  # the other process rewrites the folder's files once, right after this scan
            other.drop_uuids(["/p/b.jsonl"])
            other.put_uuids("/p/c.jsonl", [(STRADDLE[0], 5)])
            assert other.commit()
            commits.append("b dropped, c stored")
        return hits

    monkeypatch.setattr(uuidpack.Packs, "find", scan_then_other_commits)
    assert db.homes(NOWHERE) == [("/p/b.jsonl", 2)]  # as the database was when the lookup began
    assert other.conn.execute("SELECT id FROM uuid_files WHERE path = '/p/c.jsonl'").fetchone() == (2,)
    assert db.homes_many([NOWHERE, STRADDLE[0]]) == {STRADDLE[0]: [("/p/c.jsonl", 5)]}  # and as it is now
    other.close()


def test_a_file_dropped_between_the_scan_and_the_paths_is_not_damage(
    db: IndexDB, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db.put_uuids("/p/a.jsonl", [(TARGET, 1)])
    assert db.commit()
    other = IndexDB.open(tmp_path)
    assert other is not None
    scan = uuidpack.Packs.find

    def scan_then_other_drops(packs: uuidpack.Packs, wanted: uuidpack.Wanted) -> list[tuple[str, int, int]]:
        hits = list(scan(packs, wanted))
        if other.conn.execute("SELECT count(*) FROM uuid_files").fetchone() == (1,):
            other.drop_uuids(["/p/a.jsonl"])
            assert other.commit()
        return hits

    monkeypatch.setattr(uuidpack.Packs, "find", scan_then_other_drops)
    assert db.homes(TARGET) == [("/p/a.jsonl", 1)]  # before: KeyError, which the index takes for a damaged database
    assert db.homes(TARGET) == []
    other.close()


def test_a_line_past_32_bits_is_kept_whole_not_wrapped(db: IndexDB) -> None:
    far = 2**32 + 5  # wrapped to 32 bits it would be line 5
    db.put_uuids("/p/long.jsonl", [(STRADDLE[0], 4), (TARGET, far), (NOWHERE, 2**40)])
    db.put_uuids("/p/short.jsonl", [(STRADDLE[1], 5)])
    assert db.commit()
    assert db.homes(TARGET) == [("/p/long.jsonl", far)]
    assert db.homes_many([TARGET, NOWHERE, *STRADDLE, SAME_FIRST_HALF]) == {
        TARGET: [("/p/long.jsonl", far)],
        NOWHERE: [("/p/long.jsonl", 2**40)],
        STRADDLE[0]: [("/p/long.jsonl", 4)],
        STRADDLE[1]: [("/p/short.jsonl", 5)],
    }
    assert sorted(uuidpack.pack([(TARGET, far), (STRADDLE[0], 4)])) == [(STRADDLE[0], 4), (TARGET, far)]


WRITER = """
import sys
from pathlib import Path
from storage.indexdb import IndexDB
U = [f"{n:08x}-0000-4000-8000-000000000000" for n in range(30)]
db = IndexDB.open(Path(sys.argv[1]))
for i in range(1, 4001):
    db.drop_uuids([f"/p/{i % 3}.jsonl"])  # the file of the highest id, dropped: its id goes to the next file stored
    db.put_uuids(f"/p/{(i + 1) % 3}.jsonl", [(U[(i + 1) % 3 * 10 + k], k) for k in range(10)])
    assert db.commit()
"""


def test_lookups_while_another_process_drops_and_stores_files_give_only_true_homes(db: IndexDB, tmp_path: Path) -> None:
    """File k always holds uuids 10k to 10k+9 at lines 0-9; another process drops and stores the files 4000 times
    while this one looks all 30 uuids up: every home found is one a file really has."""
    uuids = [f"{n:08x}-0000-4000-8000-000000000000" for n in range(30)]
    db.put_uuids("/p/0.jsonl", [(uuids[k], k) for k in range(10)])
    assert db.commit()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)], cwd=Path(__file__).parent.parent)
    lookups, wrong = 0, []
    while writer.poll() is None:
        lookups += 1
        for uuid, homes in db.homes_many(uuids).items():
            n = uuids.index(uuid)
            wrong.extend(h for h in homes if h != (f"/p/{n // 10}.jsonl", n % 10))
    assert writer.wait() == 0
    assert lookups > 0 and wrong == []
