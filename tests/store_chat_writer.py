"""Writer processes that mirror conversations into a store, as the SDK's mirrors of many agents would
(run as a script, for the server's load test).

`python tests/store_chat_writer.py URL SCHEMA PROC TASKS SESSIONS BATCHES` runs TASKS concurrent writers
sharing one store. Writer `w` sends BATCHES batches, batch `b` to session `b % SESSIONS`: a user prompt
and the assistant's reply, as the CLI writes them (uuid, parentUuid continuing the writer's own thread
in that session, sessionId, cwd, timestamp, message). Every third batch is sent twice (a retry). Prints
one JSON line: `{"errors": N, "appends": N, "ended": <epoch seconds of the last committed append>}`.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from storage.pgstore import PostgresSessionStore, StoreError  # noqa: E402

PROJECT = "-work-team"
CWD = "/work/team"


def session_id(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


def row_uuid(writer: str, b: int, j: int) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{writer}/{b}/{j}"))


def batch(writer: str, b: int, sessions: int) -> list[dict]:
    sid = session_id(b % sessions)
    parent = row_uuid(writer, b - sessions, 1) if b >= sessions else None
    now = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    base = {"isSidechain": False, "userType": "external", "cwd": CWD, "sessionId": sid, "version": "2.1.328"}
    prompt = {
        **base,
        "parentUuid": parent,
        "type": "user",
        "message": {"role": "user", "content": f"{writer} asks question {b}"},
        "uuid": row_uuid(writer, b, 0),
        "timestamp": now,
    }
    reply = {
        **base,
        "parentUuid": prompt["uuid"],
        "type": "assistant",
        "message": {
            "id": f"msg_{writer}_{b}",
            "type": "message",
            "role": "assistant",
            "model": "claude-opus-5-5",
            "content": [{"type": "text", "text": f"answer {b} for {writer}"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "output_tokens": 5},
        },
        "uuid": row_uuid(writer, b, 1),
        "timestamp": now,
    }
    return [prompt, reply]


async def run(url: str, schema: str, proc: int, tasks: int, sessions: int, batches: int) -> dict:
    store = PostgresSessionStore(url, schema=schema, max_size=4, connect_timeout=2)
    errors: list[str] = []
    appends = 0
    ended = 0.0

    async def send(key: dict, rows: list[dict]) -> None:
        nonlocal appends, ended
        deadline = time.monotonic() + 120
        while True:
            try:
                await store.append(key, rows)
                appends += 1
                ended = time.time()
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
            rows = batch(name, b, sessions)
            await send(key, rows)
            if b % 3 == 0:
                await send(key, rows)

    try:
        await asyncio.gather(*(writer(t) for t in range(tasks)))
    finally:
        await store.close()
    return {"errors": len(errors), "appends": appends, "ended": ended}


if __name__ == "__main__":
    url, schema, *numbers = sys.argv[1:]
    proc, tasks, sessions, batches = (int(n) for n in numbers)
    print(json.dumps(asyncio.run(run(url, schema, proc, tasks, sessions, batches))), flush=True)
