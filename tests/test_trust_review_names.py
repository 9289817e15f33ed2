"""Names in the projects folder that are not valid UTF-8. Linux names are bytes; one folder whose name holds a byte
like 0x80 (a synced folder, an archive unpacked from elsewhere) came into Python as a lone surrogate
(`surrogateescape`), which SQLite, orjson and `file://` URIs cannot carry: `list`, `check`, `search`, `usage` and
`overview` died with a traceback (status 1 or 2, nothing listed), and the server answered `sessions/list`,
`workspace/diagnostic` and `workspace/symbol` with an internal error, for every session of the folder, not only the
planted one. The real CLI (Node) reads such a name with U+FFFD in it, so it never opens the files below it: they are
not sessions, and discovery now leaves them out (`storage.paths.decodable`).

Real `session-lsp` processes and a real `serve --stdio` on real files."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from conftest import CORPUS
from rawlsp import RawServer
from turnproc import session_lsp

BAD = b"-bad\x80\xff-dir"
OTHER = "1c99f271-c426-49f7-9ae1-2b8728ab22c4"
PLANTED = "33333333-3333-4333-8333-333333333333"
SHOP = "11111111-1111-4111-8111-111111111111"


def _planted(tmp_path: Path) -> Path:
    """The corpus's projects folder, plus a project folder whose name is not UTF-8 holding a session, and a session
    of the corpus whose `subagents` folder holds a folder named so with an agent file in it."""
    projects = tmp_path / "config" / "projects"
    shutil.copytree(CORPUS / "projects", projects)
    source = projects / "-Users-me-other" / f"{OTHER}.jsonl"
    bad = os.path.join(os.fsencode(projects), BAD)
    os.mkdir(bad)
    shutil.copy(source, os.path.join(bad, f"{PLANTED}.jsonl".encode()))
    sub = os.path.join(os.fsencode(projects), b"-Users-me-shop", SHOP.encode(), b"subagents", b"x\xfey")
    os.makedirs(sub)
    shutil.copy(source, os.path.join(sub, b"agent-a1b2c3.jsonl"))
    return projects


def _ok(done: object, *codes: int) -> None:
    rc, err = done.returncode, done.stderr  # type: ignore[attr-defined]
    assert rc in codes and "Traceback" not in err and "surrogates" not in err, (rc, err[-2000:])


def test_command_line_reads_a_folder_holding_names_that_are_not_utf8(tmp_path: Path) -> None:
    projects = _planted(tmp_path)
    config = projects.parent
    where = ["--projects-dir", str(projects)]
    listed = session_lsp("list", "--json", *where, config=config)
    _ok(listed, 0)
    ids = {s["sessionId"] for s in json.loads(listed.stdout)}
    assert OTHER in ids and SHOP in ids and PLANTED not in ids, ids
    _ok(session_lsp("list", "--partial", "--json", *where, config=config), 0)
    _ok(session_lsp("check", *where, config=config), 0, 1)
    _ok(session_lsp("overview", *where, config=config), 0)
    _ok(session_lsp("search", "the", *where, "--json", config=config), 0)
    _ok(session_lsp("usage", "--json", *where, config=config), 0)
    chained = session_lsp("chain", PLANTED, *where, config=config)
    _ok(chained, 2)
    assert len(chained.stderr.strip().splitlines()) == 1, chained.stderr
    _ok(session_lsp("chain", OTHER, *where, config=config), 0)


def test_server_serves_a_folder_holding_names_that_are_not_utf8(tmp_path: Path) -> None:
    projects = _planted(tmp_path)
    with RawServer() as s:
        s.initialize(projects, watch=True)
        listed = s.call("sessions/list", {})
        assert "result" in listed, listed
        ids = {x["sessionId"] for x in listed["result"]["sessions"]} if isinstance(listed["result"], dict) else set()
        ids |= {x["sessionId"] for x in listed["result"]} if isinstance(listed["result"], list) else set()
        assert OTHER in ids and SHOP in ids and PLANTED not in ids, ids
        diagnosed = s.call("workspace/diagnostic", {"previousResultIds": []})
        assert "result" in diagnosed, diagnosed
        uris = [item["uri"] for item in diagnosed["result"]["items"]]
        assert all("-bad" not in u and "x%" not in u for u in uris), uris
        found = s.call("workspace/symbol", {"query": "the"})
        assert "result" in found, found
        # a file made below such a folder while the server watches it is not taken in either
        os.makedirs(os.path.join(os.fsencode(projects), b"-late\x80"))
        shutil.copy(
            projects / "-Users-me-other" / f"{OTHER}.jsonl",
            os.path.join(os.fsencode(projects), b"-late\x80", b"44444444-4444-4444-8444-444444444444.jsonl"),
        )
        again = s.call("sessions/list", {})
        assert "result" in again, again
        assert s.proc.poll() is None
