"""Loading the uuid table in one batch: into an empty table the index by uuid is built once at the end, and
neither another connection nor a failed load ever sees the table without it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from storage.indexdb import DB_NAME, IndexDB

ROWS = {f"/p/{n}.jsonl": [(f"{n:04d}-{i:04d}", i) for i in range(50)] for n in range(20)}


def indexes(conn: sqlite3.Connection) -> list[str]:
    return [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'uuids'")]


@pytest.fixture
def db(tmp_path: Path) -> IndexDB:
    opened = IndexDB.open(tmp_path)
    assert opened is not None
    return opened


def test_into_an_empty_table_the_index_is_built_once_at_the_end(db: IndexDB, tmp_path: Path) -> None:
    other = sqlite3.connect(tmp_path / DB_NAME)
    with db.uuid_load():
        assert indexes(db.conn) == []  # this connection inserts without it
        for path, ids in ROWS.items():
            db.put_uuids(path, ids)
        assert indexes(other) == ["uuids_by_uuid"]  # another connection sees the committed schema
        assert other.execute("SELECT count(*) FROM uuids").fetchone() == (0,)
    assert db.commit()
    assert indexes(db.conn) == indexes(other) == ["uuids_by_uuid"]
    assert other.execute("SELECT count(*) FROM uuids").fetchone() == (1000,)
    plan = " ".join(str(r) for r in other.execute("EXPLAIN QUERY PLAN SELECT file FROM uuids WHERE uuid = 'x'"))
    assert "uuids_by_uuid" in plan
    assert db.homes("0007-0031") == [("/p/7.jsonl", 31)]


def test_a_failed_load_keeps_the_index_and_stores_nothing(db: IndexDB, tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), db.uuid_load():
        db.put_uuids("/p/0.jsonl", ROWS["/p/0.jsonl"])
        raise RuntimeError("a worker failed")
    db.close()
    again = sqlite3.connect(tmp_path / DB_NAME)
    assert indexes(again) == ["uuids_by_uuid"]
    assert again.execute("SELECT count(*) FROM uuids").fetchone() == (0,)


def test_into_a_filled_table_rows_are_replaced_with_the_index_kept(db: IndexDB) -> None:
    with db.uuid_load():
        db.put_uuids("/p/0.jsonl", ROWS["/p/0.jsonl"])
    db.commit()
    with db.uuid_load():
        assert indexes(db.conn) == ["uuids_by_uuid"]
        db.put_uuids("/p/0.jsonl", [("new", 3)])
    db.commit()
    assert db.homes("0000-0001") == []
    assert db.homes("new") == [("/p/0.jsonl", 3)]
