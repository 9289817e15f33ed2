"""`sessions/list` and `workspace/diagnostic` answered at the next launch from the answers the server kept, before
pygls loads, while the projects folder is as it was (`server.lsp.answers`); over a raw stdio pipe to the real
server. A kept answer is marked, so an answer carrying the mark came from the store; one without it was computed."""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import age
from rawlsp import LIVENESS, RawServer

MARK = "kept-answer-mark"


@pytest.fixture
def answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("SESSION_LSP_NO_CACHE", raising=False)
    return tmp_path / "cache" / "session-lsp" / "answers-v1"


def launch(
    projects: Path, ask: list[str], *, before: Any = None, capabilities: dict[str, Any] | None = None
) -> tuple[dict[str, Any], RawServer]:
    """Initialize, then ask each request at once; the answers by method, and the running server."""
    server = RawServer()
    server.initialize(projects, capabilities, watch=False)
    if before is not None:
        before(server)
    ids = {
        method: server.request(method, {} if method == "sessions/list" else {"previousResultIds": []}) for method in ask
    }
    return {method: server.answer(i) for method, i in ids.items()}, server


def finish(server: RawServer) -> None:
    assert server.call("shutdown")["result"] is None
    server.notify("exit")
    rc, _ = server.wait_exit(LIVENESS)
    assert rc == 0, server.stderr[-2000:]


def kept_files(answers: Path) -> list[Path]:
    return sorted(answers.glob("*.json")) if answers.is_dir() else []


def wait_kept(answers: Path, count: int) -> None:
    deadline = time.monotonic() + 60
    while len(kept_files(answers)) < count:
        assert time.monotonic() < deadline, f"{len(kept_files(answers))} answers kept, not {count}"
        time.sleep(0.05)


def mark(answers: Path) -> None:
    for f in kept_files(answers):
        entry = json.loads(f.read_bytes())
        entry["result"][MARK] = True
        f.write_text(json.dumps(entry))  # another spacing than the server's: the reader is not that strict


BOTH = ["sessions/list", "workspace/diagnostic"]


def damage(projects: Path) -> Path:
    """A malformed line at the end of one session: a finding for `workspace/diagnostic`."""
    path = sorted(projects.rglob("*.jsonl"))[0]
    with path.open("ab") as fh:
        fh.write(b"{not json\n")
    return path


def first_launch(projects: Path, answers: Path) -> dict[str, Any]:
    """A launch over the folder, settled, that keeps both answers; its answers by method."""
    age(projects)
    first, server = launch(projects, BOTH)
    wait_kept(answers, 2)  # the listing, asked before the first index was complete, is kept once it is
    finish(server)
    return first


def test_kept_answers_come_before_the_server_and_equal_its_own(corpus_projects: Path, answers: Path) -> None:
    damage(corpus_projects)
    first = first_launch(corpus_projects, answers)
    assert len(first["sessions/list"]["result"]["sessions"]) == 4
    assert first["workspace/diagnostic"]["result"]["items"]  # the corpus has findings
    mark(answers)

    again, server = launch(corpus_projects, BOTH)
    for method in BOTH:
        result = again[method]["result"]
        assert result.pop(MARK) is True, method
        assert result == first[method]["result"], method
    # the server goes on serving: pygls answers what was not kept, and nothing is answered twice
    sid = first["sessions/list"]["result"]["sessions"][0]["sessionId"]
    tree = server.call("sessions/tree", {"sessionId": sid})
    assert tree["result"]["sessionId"] == sid
    assert server.call("sessions/list", {})["result"] == first["sessions/list"]["result"]  # computed, unmarked
    finish(server)
    assert max(Counter(server.arrivals).values()) == 1


def test_a_changed_folder_is_answered_by_the_server(corpus_projects: Path, answers: Path) -> None:
    first_launch(corpus_projects, answers)
    mark(answers)

    path = damage(corpus_projects)
    age(corpus_projects)  # settled again, but not as it was kept
    again, server = launch(corpus_projects, BOTH)
    finish(server)
    for method in BOTH:
        assert MARK not in again[method]["result"], method
    lines = path.read_bytes().count(b"\n")
    found = [
        d
        for item in again["workspace/diagnostic"]["result"]["items"]
        if Path(item["uri"].removeprefix("file://")) == path
        for d in item["items"]
    ]
    assert any(d["range"]["start"]["line"] == lines - 1 for d in found), found


def test_a_folder_written_moments_ago_is_not_kept(corpus_projects: Path, answers: Path) -> None:
    age(corpus_projects, -20)  # every mtime within the racy window for the whole test (20 s ahead)
    first, server = launch(corpus_projects, BOTH)
    server.call("sessions/list", {})  # after the first index: kept now if it ever would be
    finish(server)
    assert len(first["sessions/list"]["result"]["sessions"]) == 4
    assert kept_files(answers) == []


def test_a_frame_cut_by_a_pause_reaches_the_server_whole(corpus_projects: Path, answers: Path) -> None:
    first = first_launch(corpus_projects, answers)
    mark(answers)

    def cut_request(server: RawServer) -> None:
        body = json.dumps({"jsonrpc": "2.0", "id": "cut", "method": "sessions/list", "params": {}}).encode()
        frame = b"Content-Length: %d\r\n\r\n" % len(body) + body
        server.write(frame[:30])
        time.sleep(0.5)  # longer than the early reading waits: the server loads with half a frame read
        server.write(frame[30:])

    # a client that shows no progress: the server asks nothing, so no answer of ours lands between the two halves
    again, server = launch(corpus_projects, [], before=cut_request, capabilities={})
    cut = server.answer("cut")
    finish(server)
    assert cut["result"] == first["sessions/list"]["result"]  # computed by the server: no mark


def test_a_damaged_kept_answer_is_computed_again(corpus_projects: Path, answers: Path) -> None:
    first = first_launch(corpus_projects, answers)
    for f in kept_files(answers):
        data = f.read_bytes()
        f.write_bytes(data[: len(data) // 2] + b"}")  # cut in the middle: the digest still matches

    again, server = launch(corpus_projects, BOTH)
    finish(server)
    for method in BOTH:
        assert again[method]["result"] == first[method]["result"], method


def test_a_partial_listing_answered_early_is_the_servers(corpus_projects: Path, answers: Path) -> None:
    """With the folder changed (nothing kept fits), `sessions/list {partial: true}` is answered before the server
    loads, as the server answers it before its first index: the same answer either way."""
    first_launch(corpus_projects, answers)
    damage(corpus_projects)  # one session changed: its count and usage are pending
    age(corpus_projects)

    def partial_listing() -> dict[str, Any]:
        """Listed between `initialize` and `initialized`: the first index has not started."""
        server = RawServer()
        options = {"projectsDir": str(corpus_projects), "watch": False}
        server.call("initialize", {"processId": os.getpid(), "capabilities": {}, "initializationOptions": options})
        answer = server.call("sessions/list", {"partial": True})
        server.notify("initialized", {})
        finish(server)
        return answer["result"]

    partial_listing()  # pygls answers this initialize: it is kept
    early = partial_listing()  # initialize known: answered before pygls loads
    (answers.parent / "initialize-v1.json").unlink()
    computed = partial_listing()  # initialize unknown: everything goes to pygls
    assert early["partial"] is True and sum(1 for s in early["sessions"] if s.get("partial")) >= 1
    assert early == computed


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"previousResultIds": "oops"},
        {"previousResultIds": [{"uri": 7}]},
        None,
    ],
)
def test_a_diagnostic_request_pygls_refuses_gets_its_error_not_a_kept_answer(
    params: dict[str, Any] | None, corpus_projects: Path, answers: Path
) -> None:
    """The fields a kept diagnostic answer does not depend on must still have the shape pygls takes."""
    first_launch(corpus_projects, answers)
    mark(answers)
    server = RawServer()
    server.initialize(corpus_projects, watch=False)
    reply = server.answer(server.request("workspace/diagnostic", params))
    assert "result" not in reply and reply["error"]["code"] == -32602, str(reply)[:500]
    assert "invalid parameters for workspace/diagnostic" in reply["error"]["message"]
    finish(server)
