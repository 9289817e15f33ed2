"""`sessions/list {partial: true}` while the first index is not complete, over a raw stdio pipe to the real server.

The first index starts at `initialized`, so a list asked for between `initialize` and `initialized` is answered
while it has certainly not completed (no timing involved). Such an answer reads no file whole: counts and usage
are null (and named in `pending`) unless the persistent index holds them for an unchanged file. After the index
completes, the server sends `sessions/didChange`, and a new list is whole.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from rawlsp import LIVENESS, RawServer

ROOT = Path(__file__).resolve().parents[1]
BIG_ID = "b16b16b1-0000-4000-8000-000000000001"
BIG_TITLE = "renamed at the end"
AN_HOUR_AGO = time.time() - 3600


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("SESSION_LSP_NO_CACHE", raising=False)
    return tmp_path / "cache"


def _big_session(folder: Path) -> Path:
    """A session of about 400 KiB (more than its head and tail windows) renamed in its last rows."""
    rows: list[dict[str, Any]] = []
    parent = None
    for i in range(400):
        uuid = f"00000000-0000-4000-8000-{i:012d}"
        kind = "user" if i % 2 == 0 else "assistant"
        rows.append(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "type": kind,
                "uuid": uuid,
                "sessionId": BIG_ID,
                "cwd": "/home/dev/big",
                "gitBranch": "main",
                "timestamp": f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}.000Z",
                "message": {"role": kind, "content": f"message {i} " + "x" * 1000},
            }
        )
        parent = uuid
    rows.append({"type": "custom-title", "customTitle": BIG_TITLE, "sessionId": BIG_ID})
    path = folder / "-home-dev-big" / f"{BIG_ID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def folder(corpus_projects: Path) -> Path:
    """The shared corpus, the bundled example (subagents, a `--fork-session` copy) and a big session, all last
    modified an hour ago (so the index may keep what it reads)."""
    for project in (ROOT / "examples" / "projects").iterdir():
        shutil.copytree(project, corpus_projects / project.name)
    _big_session(corpus_projects)
    for p in corpus_projects.rglob("*"):
        os.utime(p, (AN_HOUR_AGO, AN_HOUR_AGO))
    return corpus_projects


def _initialize(server: RawServer, projects: Path) -> None:
    reply = server.call(
        "initialize",
        {
            "processId": os.getpid(),
            "capabilities": {"window": {"workDoneProgress": True}},
            "initializationOptions": {"projectsDir": str(projects), "watch": False},
        },
    )
    assert "result" in reply, reply


def _list(server: RawServer, **params: Any) -> dict[str, Any]:
    reply = server.call("sessions/list", params)
    assert "result" in reply, reply
    return dict(reply["result"])


def _wait_did_change(server: RawServer) -> None:
    deadline = time.monotonic() + 60
    while not any(n["method"] == "sessions/didChange" for n in list(server.notifications)):
        assert time.monotonic() < deadline, f"no sessions/didChange; stderr: {server.stderr[-2000:]!r}"
        time.sleep(0.05)


def _end(server: RawServer) -> None:
    assert server.call("shutdown")["result"] is None
    server.notify("exit")
    rc, _ = server.wait_exit(LIVENESS)
    assert rc == 0, server.stderr[-2000:]


def _known_fields_agree(partial: list[dict[str, Any]], whole: list[dict[str, Any]]) -> int:
    """Every field a partial item gives equals the whole item's; returns how many fields were compared."""
    assert [i["sessionId"] for i in partial] == [i["sessionId"] for i in whole]
    compared = 0
    for p, w in zip(partial, whole, strict=True):
        for name, value in p.items():
            if name in ("partial", "pending"):
                continue
            if name in p.get("pending", []):
                assert value is None, (p["sessionId"], name)
                continue
            assert value == w[name], (p["sessionId"], name, value, w[name])
            compared += 1
    return compared


def test_cold_start_lists_partially_then_whole_after_did_change(folder: Path, cache: Path) -> None:
    with RawServer() as server:
        _initialize(server, folder)
        early = _list(server, partial=True)  # before `initialized`: the first index has not started
        server.notify("initialized", {})
        _wait_did_change(server)
        later = _list(server, partial=True)
        whole = _list(server)
        _end(server)

    items = early["sessions"]
    assert early["partial"] is True
    assert len(items) == 8 and all(i["partial"] is True for i in items)
    assert all(i["messageCount"] is None and i["usage"] is None for i in items)
    assert all({"messageCount", "usage"} <= set(i["pending"]) for i in items)
    big = next(i for i in items if i["sessionId"] == BIG_ID)
    assert big["title"] == BIG_TITLE and big["sizeBytes"] > 2 * 64 * 1024 and big["gitBranch"] == "main"
    forks = [i["sessionId"] for i in items if i["forkedFrom"] is not None]  # both --fork-session copies, by heads
    assert len(forks) == 2 and forks == [i["sessionId"] for i in whole["sessions"] if i["forkedFrom"] is not None]
    assert sum(len(i["subagents"]) for i in items) == sum(len(i["subagents"]) for i in whole["sessions"]) > 0

    assert _known_fields_agree(items, whole["sessions"]) >= 8 * 12
    assert later["partial"] is False and "partial" not in whole
    assert later["sessions"] == whole["sessions"]
    assert all(isinstance(i["messageCount"], int) and i["messageCount"] > 0 for i in whole["sessions"])
    assert next(i for i in whole["sessions"] if i["sessionId"] == BIG_ID)["messageCount"] == 400


def test_what_the_persistent_index_holds_is_whole_at_once(folder: Path, cache: Path) -> None:
    with RawServer() as server:  # a first run keeps every count and usage in the index database
        _initialize(server, folder)
        server.notify("initialized", {})
        _list(server)
        _end(server)
    big = folder / "-home-dev-big" / f"{BIG_ID}.jsonl"
    row = {
        "parentUuid": None,
        "type": "user",
        "uuid": "appended-1",
        "sessionId": BIG_ID,
        "message": {"content": "more"},
    }
    with open(big, "a") as fh:
        fh.write(json.dumps(row) + "\n")

    with RawServer() as server:
        _initialize(server, folder)
        early = _list(server, partial=True)
        server.notify("initialized", {})
        _wait_did_change(server)
        whole = _list(server)
        _end(server)

    items = {i["sessionId"]: i for i in early["sessions"]}
    assert "messageCount" in items[BIG_ID]["pending"] and "usage" in items[BIG_ID]["pending"]
    unchanged = [i for sid, i in items.items() if sid != BIG_ID]
    assert len(unchanged) == 7
    assert all("messageCount" not in i.get("pending", []) and "usage" not in i.get("pending", []) for i in unchanged)
    assert all(isinstance(i["messageCount"], int) and isinstance(i["usage"], dict) for i in unchanged)
    _known_fields_agree(early["sessions"], whole["sessions"])
    assert next(i for i in whole["sessions"] if i["sessionId"] == BIG_ID)["messageCount"] == 401
