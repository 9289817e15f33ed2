"""The server's output stays well-formed frames while several threads write, over a raw stdio pipe.

Answers are written from one thread and notifications from others (the first index's `$/progress` reports from
its own thread): each frame must reach the client whole. Partial `sessions/list` answers of about 650 KiB each
(1,200 sessions), eight at a time, are asked for until the first index is complete, while it reports its
progress; with pygls's own writer a report landed inside an answer in 3 of 3 runs.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from rawlsp import RawServer

SESSIONS = 1200
REQUESTS = 8
SOURCE = Path(__file__).parent / "corpus" / "claude-code-2.1.328" / "projects" / "-Users-me-other"


@pytest.fixture
def many(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    data = next(SOURCE.glob("*.jsonl")).read_bytes()
    folder = tmp_path / "projects" / "-Users-me-other"
    folder.mkdir(parents=True)
    for n in range(SESSIONS):
        (folder / f"00000000-0000-4000-8000-{n:012d}.jsonl").write_bytes(data)
    return tmp_path / "projects"


def test_answers_written_at_once_by_several_threads_arrive_whole(many: Path) -> None:
    with RawServer() as server:
        reply = server.call(
            "initialize",
            {
                "processId": os.getpid(),
                "capabilities": {"window": {"workDoneProgress": True}},
                "initializationOptions": {"projectsDir": str(many), "watch": False},
            },
        )
        assert "result" in reply, reply
        server.notify("initialized", {})  # the first index reports its progress every 50 files from its thread
        answers = []
        while not any(n["method"] == "sessions/didChange" for n in list(server.notifications)):
            ids = [server.request("sessions/list", {"partial": True}) for _ in range(REQUESTS)]
            answers += [server.answer(i, timeout=120) for i in ids]
        assert server.broken is None, server.broken
        assert len(answers) >= REQUESTS and all(len(a["result"]["sessions"]) == SESSIONS for a in answers)
        reports = [n for n in list(server.notifications) if n["method"] == "$/progress"]
        assert len(reports) >= 3, reports
        assert server.call("shutdown")["result"] is None
