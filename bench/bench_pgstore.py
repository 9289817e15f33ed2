"""Benchmark of the PostgreSQL session store: appends from 50 concurrent writers, then listing a
project of 10,000 sessions. Prints figures; it is not a test.

    .venv/bin/python bench/bench_pgstore.py [--sessions 10000] [--writers 50] [--url postgresql://...]

Without `--url` it starts a throwaway server (initdb/pg_ctl, as the tests do) and removes it after.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from storage.pgstore import PostgresSessionStore  # noqa: E402

PROJECT = "-work-team-service"
CWD = "/work/team/service"


def turn(session_id: str, n: int, parent: str | None) -> list[dict[str, Any]]:
    """Two rows shaped like the CLI's: a prompt and a reply (about 1 KiB together)."""
    ts = f"2026-11-30T10:{n // 60 % 60:02d}:{n % 60:02d}.000Z"
    u, a = str(uuid.uuid4()), str(uuid.uuid4())
    base = {"isSidechain": False, "userType": "external", "cwd": CWD, "sessionId": session_id, "version": "2.1.328"}
    return [
        {
            "parentUuid": parent,
            **base,
            "type": "user",
            "message": {"role": "user", "content": f"please look at module {n} and explain what it does " * 4},
            "uuid": u,
            "timestamp": ts,
        },
        {
            "parentUuid": u,
            **base,
            "type": "assistant",
            "message": {
                "id": f"msg_{uuid.uuid4().hex[:24]}",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": "It parses the configuration and starts the workers. " * 6}],
                "usage": {"input_tokens": 1200, "output_tokens": 80},
            },
            "uuid": a,
            "timestamp": ts,
        },
    ]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def appends(url: str, schema: str, sessions: int, writers: int, turns: int) -> None:
    store = PostgresSessionStore(url, schema=schema, max_size=min(writers, 20))
    await store.open()
    ids = [str(uuid.uuid4()) for _ in range(sessions)]
    latencies: list[float] = []

    async def writer(w: int) -> None:
        for sid in ids[w::writers]:
            parent = None
            for t in range(turns):
                rows = turn(sid, t, parent)
                parent = rows[-1]["uuid"]
                start = time.perf_counter()
                await store.append({"project_key": PROJECT, "session_id": sid}, rows)
                latencies.append(time.perf_counter() - start)

    start = time.perf_counter()
    await asyncio.gather(*(writer(w) for w in range(writers)))
    elapsed = time.perf_counter() - start
    await store.close()
    n = len(latencies)
    print(f"appends: {writers} writers, {sessions:,} sessions x {turns} batches of 2 rows = {n:,} appends")
    print(f"  {elapsed:.1f} s: {n / elapsed:,.0f} appends/s, {2 * n / elapsed:,.0f} rows/s")
    print(
        f"  latency per append: median {statistics.median(latencies) * 1000:.1f} ms, "
        f"p95 {pct(latencies, 0.95) * 1000:.1f} ms, max {max(latencies) * 1000:.1f} ms"
    )


async def timed(label: str, make: Any, repeat: int = 3) -> Any:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = await make()
        times.append(time.perf_counter() - start)
    print(f"  {label}: median {statistics.median(times) * 1000:,.0f} ms of {repeat} ({len(result):,} sessions)")
    return result


async def listing(url: str, schema: str) -> None:
    from claude_agent_sdk import list_sessions_from_store

    store = PostgresSessionStore(url, schema=schema, read_only=True)
    await store.open()
    print("listing one project:")
    await timed("list_sessions (ids and mtimes)", lambda: store.list_sessions(PROJECT))
    await timed("list_session_summaries", lambda: store.list_session_summaries(PROJECT))
    await timed("SDK list_sessions_from_store on our summaries", lambda: list_sessions_from_store(store, CWD))
    await store.close()


def cli_list(url: str, schema: str) -> None:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "server.cli", "list", "--store", url, "--store-schema", schema, "--json"],
        capture_output=True,
        cwd=ROOT,
        env={**os.environ, "SESSION_LSP_NO_CACHE": "1"},
    )
    elapsed = time.perf_counter() - start
    status = "ok" if done.returncode == 0 else done.stderr.decode()[-200:]
    print(f"  session-lsp list --store --json (materialise all, then read the files): {elapsed:.1f} s {status}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=10_000)
    ap.add_argument("--writers", type=int, default=50)
    ap.add_argument("--turns", type=int, default=2, help="batches (of 2 rows) per session")
    ap.add_argument("--url", help="an existing database (a schema of its own is made and dropped)")
    args = ap.parse_args()
    server = None
    url = args.url
    if url is None:
        from pg import start_server

        server = start_server()
        url = server.url()
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    try:
        asyncio.run(appends(url, schema, args.sessions, args.writers, args.turns))
        asyncio.run(listing(url, schema))
        cli_list(url, schema)
    finally:
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        if server is not None:
            server.remove()
    return 0


if __name__ == "__main__":
    sys.exit(main())
