"""The indexing progress is asked for only from a client that says it shows server-initiated progress, and a
client that never answers the request neither holds the index up for good nor leaves an error in the log at
exit (pygls's callback raised `CancelledError` there)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from conftest import CORPUS
from rawlsp import LIVENESS, RawServer

CREATE = "window/workDoneProgress/create"


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}


def _indexed(server: RawServer, timeout: float = 60) -> None:
    """Until the first index is complete (the server says so with `sessions/didChange`)."""
    deadline = time.monotonic() + timeout
    while not any(n["method"] == "sessions/didChange" for n in list(server.notifications)):
        assert time.monotonic() < deadline, "the first index did not complete"
        time.sleep(0.05)


def _end(server: RawServer) -> str:
    """Shut down and exit; the server's log."""
    assert "result" in server.call("shutdown")
    server.notify("exit")
    rc, _ = server.wait_exit(LIVENESS)
    assert rc == 0
    time.sleep(0.2)  # the log's last bytes
    return server.stderr.decode(errors="replace")


def test_a_client_without_progress_is_not_asked_to_show_it(tmp_path: Path) -> None:
    with RawServer("--projects-dir", str(CORPUS / "projects"), env=_env(tmp_path)) as server:
        server.initialize(CORPUS / "projects", capabilities={})
        _indexed(server)
        assert "result" in server.call("sessions/list", {})
        log = _end(server)
    assert CREATE not in server.asked
    assert not [n for n in server.notifications if n["method"] == "$/progress"]
    assert "Traceback" not in log, log


def test_a_client_that_never_answers_the_progress_request_gets_its_index_and_a_clean_exit(tmp_path: Path) -> None:
    projects = CORPUS / "projects"
    with RawServer("--projects-dir", str(projects), env=_env(tmp_path), answer_requests=False) as server:
        server.initialize(projects)
        _indexed(server)  # after the wait for the answer
        assert "result" in server.call("sessions/list", {})
        log = _end(server)
    assert CREATE in server.asked
    assert "Traceback" not in log and "CancelledError" not in log, log
