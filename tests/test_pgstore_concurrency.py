"""Many writer processes into many sessions at once, and a database killed while they write:
every entry ends up stored exactly once, each writer's batches whole and in its order."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from pg import start_server
from store_writer import PROJECT, batch, session_id

WRITER = Path(__file__).resolve().parent / "store_writer.py"


def start_writers(url: str, schema: str, procs: int, tasks: int, sessions: int, batches: int) -> list[subprocess.Popen]:
    return [
        subprocess.Popen(
            [sys.executable, str(WRITER), url, schema, str(p), str(tasks), str(sessions), str(batches)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for p in range(procs)
    ]


def finish(writers: list[subprocess.Popen]) -> list[dict]:
    reports = []
    for proc in writers:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        reports.append(json.loads(out.strip().splitlines()[-1]))
    return reports


def stored(url: str, schema: str) -> dict[str, list[dict]]:
    """session id -> its entries in store order, read straight from the tables."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            f"SELECT s.session_id, e.entry::text FROM {schema}.streams s JOIN {schema}.entries e ON e.stream_id = s.id "
            "WHERE s.project_key = %s ORDER BY s.session_id, e.seq",
            (PROJECT,),
        ).fetchall()
    out: dict[str, list[dict]] = {}
    for sid, text in rows:
        out.setdefault(sid, []).append(json.loads(text))
    return out


def check_exactly_once_in_order(got: dict[str, list[dict]], procs: int, tasks: int, sessions: int, batches: int) -> int:
    """Assert every writer's batches are stored once, whole, contiguous and in order; return the entry count."""
    total = 0
    for s in range(sessions):
        entries = got.get(session_id(s), [])
        total += len(entries)
        expected_writers = {f"p{p}t{t}" for p in range(procs) for t in range(tasks)}
        seen_batches: dict[str, list[int]] = {w: [] for w in expected_writers}
        i = 0
        while i < len(entries):
            head = entries[i]
            rows = batch(head["w"], head["b"])
            assert entries[i : i + len(rows)] == rows, f"batch {head['w']}/{head['b']} split or altered"
            seen_batches[head["w"]].append(head["b"])
            i += len(rows)
        for w, got_batches in seen_batches.items():
            assert got_batches == [b for b in range(batches) if b % sessions == s], (w, got_batches)
    return total


def test_many_writers_into_many_sessions(pg_server, pg_schema) -> None:
    procs, tasks, sessions, batches = 4, 5, 10, 30
    url = pg_server.url()
    reports = finish(start_writers(url, pg_schema, procs, tasks, sessions, batches))
    assert all(r["errors"] == 0 for r in reports), reports
    total = check_exactly_once_in_order(stored(url, pg_schema), procs, tasks, sessions, batches)
    assert total == procs * tasks * batches * 4  # 20 writers x 30 batches x 4 entries, retries skipped


def test_database_killed_mid_batch_loses_and_duplicates_nothing(pg_schema) -> None:
    try:
        server = start_server()
    except Exception as exc:  # noqa: BLE001
        import os

        if os.environ.get("CI"):
            pytest.fail(f"POSTGRESQL NOT AVAILABLE under CI: {exc}")
        pytest.skip(f"POSTGRESQL NOT AVAILABLE: {exc}")
    try:
        procs, tasks, sessions, batches = 2, 4, 6, 150
        url = server.url()
        writers = start_writers(url, pg_schema, procs, tasks, sessions, batches)
        before = 0
        deadline = time.monotonic() + 120
        while before < 200 and time.monotonic() < deadline:  # wait until the writers are well under way
            time.sleep(0.05)
            try:
                before = sum(len(v) for v in stored(url, pg_schema).values())
            except psycopg.Error:
                before = 0
        assert before >= 200, "the writers never got going"
        server.kill()
        time.sleep(1.0)
        server.start()
        reports = finish(writers)
        got = stored(url, pg_schema)
        total = check_exactly_once_in_order(got, procs, tasks, sessions, batches)
        errors = sum(r["errors"] for r in reports)
        print(f"kill test: {before} entries stored before the kill, {total} after; {errors} failed appends retried")
        assert total == procs * tasks * batches * 4
        assert total > before  # some of it was written after the restart
        assert errors > 0, "no writer noticed the kill"
    finally:
        server.remove()
