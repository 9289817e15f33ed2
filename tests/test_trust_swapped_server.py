"""The real server over stdio, attacked: a session its discovery found is swapped for a symlink to an outside copy
holding a marker just before the server (or a worker it forked) first opens it.

The swap is made deterministic by a test hook only this test loads (`tests/swaphook/sitecustomize.py` on the
server's PYTHONPATH), which swaps the file at the listing's first open of it. Before, the open followed the link and
the marker showed as the session's title in `sessions/list`; now no answer (list, hover, workspace symbols) holds it,
and the other sessions are answered as before.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from conftest import CORPUS, age
from rawlsp import LIVENESS, RawServer

ROOT = Path(__file__).resolve().parents[1]
SHOP = "-Users-me-shop"
S1 = "11111111-1111-4111-8111-111111111111"
OTHER = "1c99f271-c426-49f7-9ae1-2b8728ab22c4"
MARKER = "ZEBRAMARKER"
SECRET_UUID = "99999999-9999-4999-8999-999999999999"


def _outside_copy(session: Path, dest: Path) -> None:
    """`session` with a marked prompt first and a marked custom title last."""
    row = {
        "type": "user",
        "parentUuid": None,
        "isSidechain": False,
        "uuid": SECRET_UUID,
        "sessionId": S1,
        "cwd": "/Users/me/shop",
        "timestamp": "2026-11-29T23:00:00.000Z",
        "message": {"role": "user", "content": f"{MARKER} the outside file was read"},
    }
    title = {"type": "custom-title", "customTitle": MARKER, "sessionId": S1}
    dest.write_bytes(json.dumps(row).encode() + b"\n" + session.read_bytes() + json.dumps(title).encode() + b"\n")


def _wait_for_index(server: RawServer) -> None:
    deadline = time.monotonic() + 60
    while not any(n["method"] == "sessions/didChange" for n in list(server.notifications)):
        assert time.monotonic() < deadline, f"no sessions/didChange; stderr: {server.stderr[-2000:]!r}"
        time.sleep(0.05)


def test_the_server_never_answers_from_a_session_swapped_for_a_link_out(tmp_path: Path) -> None:
    """Without the index database the server lists from the files (`storage.sessions`): discovery, then the hooked
    read of the session's head and tail, which swaps the file first."""
    projects = tmp_path / "config" / "projects"
    shutil.copytree(CORPUS / "projects", projects)
    target = projects / SHOP / f"{S1}.jsonl"
    outside = tmp_path / "outside.jsonl"
    _outside_copy(target, outside)
    age(projects)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "tests" / "swaphook"), str(ROOT)]),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "SWAP_MODULE": "storage.sessions",
        "SWAP_TARGET": str(target),
        "SWAP_MOVED": str(tmp_path / "moved.jsonl"),
        "SWAP_OUTSIDE": str(outside),
    }
    env["SESSION_LSP_NO_CACHE"] = "1"
    answers: list[Any] = []
    with RawServer(env=env) as server:
        server.initialize(projects, watch=False)
        answers.append(server.call("sessions/list", {}, timeout=LIVENESS))  # the first, partial answer
        _wait_for_index(server)
        listed = server.call("sessions/list", {}, timeout=LIVENESS)
        answers.append(listed)
        uri = target.as_uri()
        for line in (0, 1, 2):
            answers.append(
                server.call(
                    "textDocument/hover",
                    {"textDocument": {"uri": uri}, "position": {"line": line, "character": 3}},
                    timeout=LIVENESS,
                )
            )
        answers.append(server.call("workspace/symbol", {"query": MARKER}, timeout=LIVENESS))
        answers.append(server.call("workspace/symbol", {"query": SECRET_UUID[:8]}, timeout=LIVENESS))
        assert server.call("shutdown", timeout=LIVENESS).get("result", "x") is None
        server.notify("exit")
    assert target.is_symlink()  # the hook swapped it
    text = json.dumps(answers)
    assert MARKER not in text and SECRET_UUID not in text
    assert OTHER in json.dumps(listed["result"]["sessions"])  # the rest is answered
