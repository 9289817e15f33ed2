"""A commit that does not checkpoint: the first index's batch stays in the write-ahead log, where every connection
reads it, until the next commit that checkpoints (the listing's, on a connection of its own) copies it into the
database file; a process that ends before that loses nothing of it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from storage.indexdb import DB_NAME, Identity, IndexDB

BLOB = 2 * 1024 * 1024
FILES = 4
"""Four 2 MiB states: past the 1000 pages (4 MiB) of log at which a commit checkpoints."""


def _states() -> list[tuple[str, Identity, bytes, bytes]]:
    return [(f"/p/{n}.jsonl", Identity(1, n, BLOB, 5, 5, 0, b""), b"state", bytes([n]) * BLOB) for n in range(FILES)]


def test_the_batch_stays_in_the_log_until_another_commit_checkpoints(tmp_path: Path) -> None:
    db = IndexDB.open(tmp_path)
    assert db is not None
    base = os.path.getsize(tmp_path / DB_NAME)
    db.put_rowsets(_states())
    assert db.commit(checkpoint=False)
    assert os.path.getsize(tmp_path / DB_NAME) == base  # nothing copied into the database file
    assert os.path.getsize(tmp_path / f"{DB_NAME}-wal") > FILES * BLOB

    listing = IndexDB.open(tmp_path)
    assert listing is not None
    assert listing.rowset_rows("/p/3.jsonl") == (b"state", bytes([3]) * BLOB)  # read from the log
    listing.put_usages([("/p/0.jsonl", [], {"costUSD": 1})])
    assert listing.commit()  # checkpoints: the index's batch is copied too
    assert os.path.getsize(tmp_path / DB_NAME) > FILES * BLOB
    db.put_usages([("/p/1.jsonl", [], {"costUSD": 2})])
    assert db.commit()  # the connection checkpoints again as usual
    assert db.conn.execute("PRAGMA wal_autocheckpoint").fetchone() == (1000,)
    listing.close()
    db.close()


def test_a_process_that_ends_before_the_checkpoint_loses_nothing(tmp_path: Path) -> None:
    script = f"""
import os, sys
sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
from pathlib import Path
from tests.test_indexdb_checkpoint import _states
from storage.indexdb import IndexDB
db = IndexDB.open(Path({str(tmp_path)!r}))
db.put_rowsets(_states())
assert db.commit(checkpoint=False)
os._exit(0)  # no close, no checkpoint
"""
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    assert os.path.getsize(tmp_path / DB_NAME) < BLOB  # the batch never reached the database file
    db = IndexDB.open(tmp_path)
    assert db is not None
    assert sorted(db.rowset_identities()) == [f"/p/{n}.jsonl" for n in range(FILES)]
    assert db.rowset_rows("/p/2.jsonl") == (b"state", bytes([2]) * BLOB)
    db.close()
