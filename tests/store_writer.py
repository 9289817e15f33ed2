"""A mirror-like writer process for the store's concurrency and crash tests (run as a script).

`python tests/store_writer.py URL SCHEMA PROC TASKS SESSIONS BATCHES` runs TASKS concurrent
writers sharing one store, as the SDK's mirrors of several agents in one process would. Writer
`w` sends BATCHES batches, batch `b` to session `b % SESSIONS`: three entries with uuids
`<w>-<b>-<j>` and one without (`{"type": "mode", "w", "b"}`). Every third batch is sent twice
(a retry). A failed append is retried until it succeeds (0.2 s apart, for at most 120 s), as a
patient mirror would. Prints one JSON line: `{"errors": N, "first_error": "..."}`.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from storage.pgstore import PostgresSessionStore, StoreError  # noqa: E402

PROJECT = "-work-team"


def session_id(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


def batch(writer: str, b: int) -> list[dict]:
    rows: list[dict] = [{"type": "user", "uuid": f"{writer}-{b}-{j}", "w": writer, "b": b, "j": j} for j in range(3)]
    rows.insert(1, {"type": "mode", "w": writer, "b": b})
    return rows


async def run(url: str, schema: str, proc: int, tasks: int, sessions: int, batches: int) -> dict:
    store = PostgresSessionStore(url, schema=schema, max_size=4, connect_timeout=2)
    errors: list[str] = []

    async def send(key: dict, rows: list[dict]) -> None:
        deadline = time.monotonic() + 120
        while True:
            try:
                await store.append(key, rows)
                return
            except StoreError as exc:
                errors.append(str(exc))
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.2)

    async def writer(t: int) -> None:
        name = f"p{proc}t{t}"
        for b in range(batches):
            key = {"project_key": PROJECT, "session_id": session_id(b % sessions)}
            rows = batch(name, b)
            await send(key, rows)
            if b % 3 == 0:
                await send(key, rows)

    try:
        await asyncio.gather(*(writer(t) for t in range(tasks)))
    finally:
        await store.close()
    return {"errors": len(errors), "first_error": errors[0] if errors else None}


if __name__ == "__main__":
    url, schema, *numbers = sys.argv[1:]
    proc, tasks, sessions, batches = (int(n) for n in numbers)
    print(json.dumps(asyncio.run(run(url, schema, proc, tasks, sessions, batches))), flush=True)
