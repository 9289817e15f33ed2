"""Looking for a subagent's transcript in the other sessions of a project never goes through a link leading out.

The index's discovery skips a session's `subagents` folder linked out of the projects folder, but the lookup
behind the `missing-subagent` diagnostic (an Agent call whose transcript is in none of the project's sessions)
searched every session's `subagents` folder, linked or not: a file outside answered for a missing one (the
diagnostic went away), and a link to `/` had it search the whole file system for each lookup.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import CORPUS

from server.index import ProjectIndex

SHOP = "-Users-me-shop"
WITH_AGENT = "22222222-2222-4222-8222-222222222222"
AGENT = "agent-a88b3ce23b875db07.jsonl"


def missing_subagent(projects: Path) -> list[str]:
    index = ProjectIndex(projects, persist=False)
    index.scan()
    return [d.message for d in index.all_diagnostics() if d.code == "missing-subagent"]


def test_a_subagent_file_outside_does_not_answer_for_a_missing_one(tmp_path: Path) -> None:
    projects = tmp_path / "config" / "projects"
    shutil.copytree(CORPUS / "projects", projects)
    assert missing_subagent(projects) == []
    outside = tmp_path / "outside"
    outside.mkdir()
    own = projects / SHOP / WITH_AGENT / "subagents"
    shutil.move(own / AGENT, outside / AGENT)  # the session's own copy is gone; one lies outside
    (projects / SHOP / "d864acd2-d28b-43ce-b430-2208a10860fe").mkdir()
    (projects / SHOP / "d864acd2-d28b-43ce-b430-2208a10860fe" / "subagents").symlink_to(outside)
    found = missing_subagent(projects)
    print(f"missing-subagent diagnostics with the agent file only outside: {len(found)}")
    assert len(found) == 1 and "a88b3ce23b875db07" in found[0], found
