"""The server serves one projects folder: every `sessions/*` request that names another with
`projectsDir` is refused before anything is read or written (the real server over stdio)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import CORPUS
from rawlsp import RawServer

S1 = "11111111-1111-4111-8111-111111111111"
INVALID_PARAMS = -32602


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    served, other = tmp_path / "served" / "projects", tmp_path / "other" / "projects"
    shutil.copytree(CORPUS / "projects", served)
    shutil.copytree(CORPUS / "projects", other)
    return served, other


@pytest.fixture
def server(folders: tuple[Path, Path]) -> Iterator[RawServer]:
    with RawServer() as s:
        s.initialize(folders[0], watch=False)
        yield s


@pytest.mark.parametrize(
    "method",
    ["sessions/list", "sessions/tree", "sessions/chain", "sessions/resume", "sessions/conversation", "sessions/fork"],
)
def test_a_request_naming_another_projects_folder_is_refused(
    server: RawServer, folders: tuple[Path, Path], method: str
) -> None:
    served, other = folders
    before = (
        sorted(p.relative_to(served) for p in served.rglob("*")),
        sorted(p.relative_to(other) for p in other.rglob("*")),
    )
    reply = server.call(method, {"sessionId": S1, "projectsDir": str(other)}, timeout=30)
    error = reply.get("error") or {}
    assert error.get("code") == INVALID_PARAMS, reply
    assert error.get("data", {}).get("reason") == "outside-projects", error
    after = (
        sorted(p.relative_to(served) for p in served.rglob("*")),
        sorted(p.relative_to(other) for p in other.rglob("*")),
    )
    assert after == before
    ok = server.call(method, {"sessionId": S1, "projectsDir": str(served)}, timeout=30)
    assert "result" in ok, ok  # naming its own folder is fine


def test_a_session_id_with_a_trailing_newline_is_no_session_id(tmp_path: Path) -> None:
    """`$` in a regular expression also matches before a final newline: `<uuid>\\n` must not pass
    for a session id, neither to name a file we create nor to list a planted `<uuid>\\n.jsonl`."""
    import json
    import subprocess
    import sys

    from storage.errors import InvalidArgument
    from storage.recorder import SessionRecorder

    projects = tmp_path / "config" / "projects"
    shutil.copytree(CORPUS / "projects", projects)
    odd = "22222222-2222-4222-8222-222222222222\n"
    source = projects / "-Users-me-shop" / f"{S1}.jsonl"
    (source.parent / f"{odd}.jsonl").write_bytes(source.read_bytes().replace(S1.encode(), odd.strip().encode()))
    listed = subprocess.run(
        [sys.executable, "-m", "server.cli", "list", "--json", "--projects-dir", str(projects)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stderr
    assert odd not in [s["sessionId"] for s in json.loads(listed.stdout)]
    work = tmp_path / "work"
    work.mkdir()
    before = sorted(projects.rglob("*"))
    with pytest.raises(InvalidArgument):
        SessionRecorder.create(projects, str(work), session_id=odd, mark_live=False)
    assert sorted(projects.rglob("*")) == before
