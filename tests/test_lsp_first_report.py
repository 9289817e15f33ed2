"""A cold start's `workspace/diagnostic`, answered before pygls loads from the first index, which runs in a process
of its own (`server.index.prefill`, `server.lsp.firstreport`); over a raw stdio pipe to the real server.

The report sent early must be the one the server computes itself (and the one a server without the index
database computes); a request the early reader cannot answer hands the held one to the server; notifications
that came meanwhile still reach it; and stopping the server at any moment of the first index ends the index's
process and its workers with it. Only liveness bounds (LIVENESS seconds: longer means stuck)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import age, generated_folder
from rawlsp import LIVENESS, RawServer
from turnproc import alive, children, first_index_process, has_read

EARLY = "workspace/diagnostic answered before the server loaded"
DIAGNOSTIC = {"previousResultIds": []}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("SESSION_LSP_NO_CACHE", raising=False)
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 60 MB of sessions: the first index forks its workers and has work queued for them."""
    return generated_folder(tmp_path_factory, "firstreport", 60, 7)


def damage(projects: Path) -> Path:
    """A malformed line at the end of one session: a finding for `workspace/diagnostic`."""
    path = sorted(projects.rglob("*.jsonl"))[0]
    with path.open("ab") as fh:
        fh.write(b"{not json\n")
    age(projects)
    return path


def launch(projects: Path, log: Path, **kwargs: Any) -> RawServer:
    server = RawServer("--log-file", str(log), "-v", **kwargs)
    server.initialize(projects, watch=False)
    return server


def finish(server: RawServer) -> None:
    assert server.call("shutdown")["result"] is None
    server.notify("exit")
    rc, _ = server.wait_exit(LIVENESS)
    assert rc == 0, server.stderr[-2000:]


def uncached_report(projects: Path) -> dict[str, Any]:
    """The report of a server without the index database: no first index of its own process, nothing early."""
    server = RawServer(env={**os.environ, "SESSION_LSP_NO_CACHE": "1"})
    server.initialize(projects, watch=False)
    report = server.call("workspace/diagnostic", DIAGNOSTIC)["result"]
    finish(server)
    return report


def a_session(server: RawServer) -> str:
    sessions = server.call("sessions/list", {})["result"]["sessions"]
    return str(sessions[0]["sessionId"])


def test_a_cold_report_comes_early_and_is_the_servers(corpus_projects: Path, cache: Path, tmp_path: Path) -> None:
    damage(corpus_projects)
    expected = uncached_report(corpus_projects)
    assert expected["items"], "the corpus with a damaged line has findings"
    log = tmp_path / "server.log"
    server = launch(corpus_projects, log)
    early = server.call("workspace/diagnostic", DIAGNOSTIC)["result"]
    a_session(server)  # a request the early reader does not answer: pygls serves from here on
    computed = server.call("workspace/diagnostic", DIAGNOSTIC)["result"]
    finish(server)
    assert EARLY in log.read_text()
    assert early == expected
    assert computed == expected


def test_a_request_during_the_hold_hands_both_to_the_server(corpus_projects: Path, cache: Path, tmp_path: Path) -> None:
    damage(corpus_projects)
    expected = uncached_report(corpus_projects)
    log = tmp_path / "server.log"
    server = launch(corpus_projects, log)
    held = server.request("workspace/diagnostic", DIAGNOSTIC)
    listed = server.request("sessions/list", {})  # not partial: the early reader does not answer it
    assert server.answer(held)["result"] == expected
    assert len(server.answer(listed)["result"]["sessions"]) == 4
    finish(server)
    assert EARLY not in log.read_text()


def test_a_notification_during_the_hold_reaches_the_server(corpus_projects: Path, cache: Path, tmp_path: Path) -> None:
    path = damage(corpus_projects)
    server = launch(corpus_projects, tmp_path / "server.log")
    held = server.request("workspace/diagnostic", DIAGNOSTIC)
    uri = path.as_uri()
    server.notify(
        "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "jsonl", "version": 1, "text": ""}}
    )
    assert server.answer(held)["result"]["items"]
    deadline = time.monotonic() + 60
    while not any(
        n["method"] == "textDocument/publishDiagnostics" and n["params"]["uri"] == uri
        for n in list(server.notifications)
    ):
        assert time.monotonic() < deadline, "the document opened during the hold got no diagnostics"
        time.sleep(0.05)
    finish(server)


def _prefill_child(server: RawServer) -> int:
    """The first index's process, once its workers are at work (none seen within LIVENESS: fail)."""

    def at_work(pid: int) -> bool:
        workers = children(pid)
        return bool(workers) and all(has_read(w) for w in workers)

    found = first_index_process(server.proc.pid, at_work, LIVENESS)
    assert found is not None, "the first index's process with its workers was not seen"
    return found


def _stop(server: RawServer, how: str) -> None:
    if how == "exit":
        server.notify("exit")
    elif how == "eof":
        assert server.proc.stdin is not None
        server.proc.stdin.close()
    elif how == "sigterm":
        server.proc.send_signal(signal.SIGTERM)
    else:
        server.proc.kill()  # no handler of ours runs: the kernel's parent-death signals alone end the others


@pytest.mark.parametrize("how", ["exit", "eof", "sigterm", "sigkill"])
def test_stopping_during_the_first_index_ends_its_process_and_workers(
    big: Path, cache: Path, tmp_path: Path, how: str
) -> None:
    server = launch(big, tmp_path / "server.log")
    try:
        server.request("workspace/diagnostic", DIAGNOSTIC)
        child = _prefill_child(server)
        workers = children(child)
        for pid in (child, *workers):
            os.kill(pid, signal.SIGSTOP)  # stuck for good: only their end can free the server
        _stop(server, how)
        rc, _ = server.wait_exit(LIVENESS)
        assert rc is not None, f"the server did not end on {how}"
        deadline = time.monotonic() + LIVENESS
        while any(alive(p) for p in (child, *workers)):
            assert time.monotonic() < deadline, (
                f"left running after {how}: {[p for p in (child, *workers) if alive(p)]}"
            )
            time.sleep(0.05)
    finally:
        server.kill()


def test_a_first_index_killed_midway_leaves_the_server_to_index(big: Path, cache: Path, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    server = launch(big, log)
    held = server.request("workspace/diagnostic", DIAGNOSTIC)
    os.kill(_prefill_child(server), signal.SIGKILL)
    report = server.answer(held)["result"]
    a_session(server)
    assert server.call("workspace/diagnostic", DIAGNOSTIC)["result"] == report
    finish(server)
    assert EARLY not in log.read_text()
    assert report == uncached_report(big)


def test_the_first_index_never_runs_code_from_the_working_folder(
    corpus_projects: Path, cache: Path, tmp_path: Path
) -> None:
    """The editor starts the server in the folder it has open, which anyone may have written: the first index's
    interpreter takes our own package, never a `server` package, `sitecustomize` or `usercustomize` found there."""
    damage(corpus_projects)
    planted = tmp_path / "workspace"
    marker = tmp_path / "planted-code-ran"
    body = f"import pathlib\npathlib.Path({str(marker)!r}).write_text(__name__)\n"
    for name in ("server/__init__.py", "server/index/__init__.py", "server/index/prefillchild.py"):
        (planted / name).parent.mkdir(parents=True, exist_ok=True)
        (planted / name).write_text(body)
    for name in ("sitecustomize.py", "usercustomize.py"):
        (planted / name).write_text(body)
    log = tmp_path / "server.log"
    server = launch(corpus_projects, log, command=[str(Path(sys.executable).parent / "session-lsp")], cwd=planted)
    report = server.call("workspace/diagnostic", DIAGNOSTIC)["result"]
    finish(server)
    assert EARLY in log.read_text()  # the first index's process ran, and gave the report
    assert report["items"]
    assert not marker.exists(), marker.read_text()
