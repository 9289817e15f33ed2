"""`sessions/fork` makes its new session only in a project folder, beside a session file it forks.

The fork's source was decided for reading, which takes any transcript below the projects folder: a subagent's file
(`<project>/<session>/subagents/agent-*.jsonl`), a file put in the projects folder itself or deeper. The new file went
beside it: a `<uuid>.jsonl` in a subagents folder (listed then as one more subagent of the session, a copy of another
one's rows) or in the projects folder itself, where the CLI never puts a session and never resumes one. The real server
over stdio; before, each fork below was answered with the new file's path and the file made.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import CORPUS
from rawlsp import RawServer

SUBAGENT = "-Users-me-shop/22222222-2222-4222-8222-222222222222/subagents/agent-a88b3ce23b875db07.jsonl"


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    dest = tmp_path / "projects"
    shutil.copytree(CORPUS / "projects", dest)
    loose = dest / "-Users-me-shop" / "22222222-2222-4222-8222-222222222222.jsonl"
    shutil.copy(loose, dest / "loose.jsonl")  # a transcript in the projects folder itself
    (dest / "-Users-me-shop" / "deeper").mkdir()
    shutil.copy(loose, dest / "-Users-me-shop" / "deeper" / "22222222-2222-4222-8222-222222222299.jsonl")
    return dest


def _jsonl(projects: Path) -> set[Path]:
    return set(projects.rglob("*.jsonl"))


@pytest.mark.parametrize(
    "source", [SUBAGENT, "loose.jsonl", "-Users-me-shop/deeper/22222222-2222-4222-8222-222222222299.jsonl"]
)
def test_a_fork_of_a_file_that_is_no_session_file_makes_nothing(server: RawServer, projects: Path, source: str) -> None:
    before = _jsonl(projects)
    reply = server.call("sessions/fork", {"path": str(projects / source)})
    assert "error" in reply, reply  # before: {"sessionId": ..., "path": ".../subagents/<uuid>.jsonl"}
    assert reply["error"]["code"] == -32602 and reply["error"]["data"]["reason"] == "not-a-transcript", reply
    assert _jsonl(projects) == before


def test_a_fork_of_a_session_file_still_goes_beside_it(server: RawServer, projects: Path) -> None:
    source = projects / "-Users-me-shop" / "22222222-2222-4222-8222-222222222222.jsonl"
    reply = server.call("sessions/fork", {"path": str(source)})
    made = Path(reply["result"]["path"])
    assert made.parent == source.parent and made.is_file()
