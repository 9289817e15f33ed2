"""The uuid tables of the index database: what storing a folder's uuids costs and how long lookups take, packed (one
row per file, found by a scan) and, for comparison, as the row per uuid with an index by uuid that schema 6 kept.
Prints figures; it is not a test.

    .venv/bin/python -m bench.bench_uuid_lookup [--mb 300 | --projects DIR] [--lookups 200]
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.baseline import favour_this_run
from bench.make_projects import add_folder_arguments, projects_for
from server.index.fill import fill
from server.index.store import ProjectIndex, tracked_kind
from storage.indexdb import IndexDB
from storage.sessions import read_session_info

OLD_SCHEMA = """
CREATE TABLE uuid_files(id INTEGER PRIMARY KEY, path TEXT UNIQUE);
CREATE TABLE uuids(file INTEGER, line INTEGER, uuid TEXT, PRIMARY KEY(file, line, uuid)) WITHOUT ROWID;
"""
OLD_LOOKUP = "SELECT f.path, u.line FROM uuids u JOIN uuid_files f ON f.id = u.file WHERE u.uuid = ?"


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def spread(times: list[float]) -> str:
    ms = sorted(t * 1000 for t in times)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    return f"p50 {statistics.median(ms):.2f} ms, p99 {p99:.2f} ms, max {ms[-1]:.2f} ms ({len(ms)} lookups)"


def old_table(folder: Path, files: list[tuple[str, list[tuple[str, int]]]]) -> tuple[sqlite3.Connection, float]:
    """Schema 6's table filled as its `uuid_load` did (the index built once after the inserts)."""
    conn = sqlite3.connect(folder / "old.sqlite3", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.executescript(OLD_SCHEMA)
    t0 = time.perf_counter()
    conn.execute("BEGIN")
    for path, pairs in files:
        conn.execute("INSERT INTO uuid_files(path) VALUES (?)", (path,))
        (file,) = conn.execute("SELECT id FROM uuid_files WHERE path = ?", (path,)).fetchone()
        conn.executemany("INSERT INTO uuids VALUES (?,?,?)", ((file, line, u) for u, line in pairs))
    conn.execute("CREATE INDEX uuids_by_uuid ON uuids(uuid)")
    conn.execute("COMMIT")
    return conn, time.perf_counter() - t0


def main() -> None:
    print(favour_this_run())
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_folder_arguments(ap)
    ap.add_argument("--projects", type=Path, default=None, help="an existing projects folder instead of --mb")
    ap.add_argument("--lookups", type=int, default=200)
    args = ap.parse_args()
    projects = args.projects or projects_for(args)
    with tempfile.TemporaryDirectory(prefix="uuid-bench-") as tmp:
        folder = Path(tmp)
        db = IndexDB.open(folder)
        assert db is not None
        index = ProjectIndex(projects, persist=False)
        paths = sorted(index.discover())
        t0 = time.perf_counter()
        read = fill(db, index.projects_dir, paths, rows=False).uuids
        print(f"{projects}: {len(paths)} files read and stored in {time.perf_counter() - t0:.2f} s")
        pairs = [(path, packed.pairs()) for path, packed in read]
        every = [u for _, ps in pairs for u, _ in ps]
        print(f"{len(every)} uuids")

        new = IndexDB.open(folder / "new")
        assert new is not None

        def store_new() -> None:
            with new.uuid_load():
                for path, ps in pairs:
                    new.put_uuids(path, ps)
            new.commit()

        print(f"storing every file's uuids, packed: {timed(store_new):.3f} s")
        old, old_s = old_table(folder, pairs)
        print(f"storing them as schema 6 did (a row each, then the index): {old_s:.3f} s")

        rng = random.Random(1)
        present = rng.sample(every, min(args.lookups, len(every)))
        absent = [f"{rng.getrandbits(128):032x}" for _ in range(args.lookups)]
        absent = [f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}" for h in absent]
        first = timed(lambda: new.homes(present[0]))
        print(f"the first lookup of a connection, packed (reads every pack into memory): {first * 1000:.1f} ms")
        for name, uuids in (("present", present), ("absent", absent)):
            print(f"one uuid ({name}), packed scan: {spread([timed(lambda u=u: new.homes(u)) for u in uuids])}")
            old_times = [timed(lambda u=u: old.execute(OLD_LOOKUP, (u,)).fetchall()) for u in uuids]
            print(f"one uuid ({name}), schema 6 index: {spread(old_times)}")
        firsts = [u for p in paths if tracked_kind(p) == "session" and (u := read_session_info(p).first_uuid)]
        print(
            f"every session's first uuid ({len(firsts)}, as sessions/list links forks), packed, one scan: "
            f"{timed(lambda: new.homes_many(firsts)) * 1000:.1f} ms"
        )
        print(
            f"the same, schema 6 index, one query each: "
            f"{timed(lambda: [old.execute(OLD_LOOKUP, (u,)).fetchall() for u in firsts]) * 1000:.1f} ms"
        )
        old.close()
        new.close()
        db.close()
        server_index(projects, folder, firsts, present)


def server_index(projects: Path, folder: Path, firsts: list[str], present: list[str]) -> None:
    """The language server's index of the folder, restored from a database its cold scan filled: its diagnostics
    (every link looked up in one scan), the listing's fork links (one scan) and single lookups."""
    os.environ["XDG_CACHE_HOME"] = str(folder / "xdg")
    os.environ.pop("SESSION_LSP_NO_CACHE", None)
    cold = ProjectIndex(projects)
    print(f"server index, cold scan (fills the database): {timed(cold.scan):.2f} s")
    cold.close()
    index = ProjectIndex(projects)
    print(f"server index, restored: {timed(index.scan):.2f} s")
    print(f"  every file's diagnostics: {timed(index.all_diagnostics):.2f} s")
    print(f"  every session's first uuid, homes_many: {timed(lambda: index.homes_many(firsts)) * 1000:.1f} ms")
    print(f"  one uuid, homes: {spread([timed(lambda u=u: index.homes(u)) for u in present])}")
    index.close()


if __name__ == "__main__":
    main()
