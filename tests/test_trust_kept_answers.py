"""A kept answer (`server.lsp.answers`, replayed before pygls loads by `server.lsp.early`) is never replayed for
another projects folder than the one the launch serves.

With no `projectsDir` on the command line nor in the client's options, the folder served comes from the
environment (`$CLAUDE_CONFIG_DIR`, else `~/.claude`).
A `projectsDir` starting with `~` comes from `$HOME`.
The same editor (the same `initialize`) launched over another folder must list that folder's sessions, not
the sessions kept for the first one. Real server over stdio, one cache folder for both launches.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import CORPUS
from rawlsp import LIVENESS, RawServer
from test_lsp_kept_answers import age, finish, kept_files, wait_kept

ONE = "11111111-1111-4111-8111-111111111111"


def sessions_of(folder: Path) -> list[str]:
    return sorted(p.stem for p in folder.glob("*/*.jsonl"))


@pytest.fixture
def two_homes(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """Config homes A (the corpus: four sessions) and B (one of them), and an environment with a cache of its own."""
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(CORPUS / "projects", a / "projects")
    (b / "projects" / "-Users-me-shop").mkdir(parents=True)
    shutil.copy(a / "projects" / "-Users-me-shop" / f"{ONE}.jsonl", b / "projects" / "-Users-me-shop")
    age(a / "projects")
    age(b / "projects")
    env = {k: v for k, v in os.environ.items() if k != "SESSION_LSP_NO_CACHE"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    return a, b, env


def listed(env: dict[str, str], options: dict[str, Any], *, keeps: int = 0) -> list[str]:
    """The session ids a launch lists; with `keeps`, the launch ends once that many answers are kept."""
    server = RawServer(env=env)
    reply = server.call(
        "initialize",
        {"processId": os.getpid(), "capabilities": {}, "initializationOptions": {"watch": False, **options}},
    )
    assert "result" in reply, reply
    server.notify("initialized", {})
    answer = server.call("sessions/list", {}, timeout=LIVENESS)
    assert "result" in answer, answer
    if keeps:
        wait_kept(Path(env["XDG_CACHE_HOME"]) / "session-lsp" / "answers-v1", keeps)
    finish(server)
    return sorted(s["sessionId"] for s in answer["result"]["sessions"])


def test_a_kept_listing_is_not_replayed_for_another_config_home(two_homes: tuple[Path, Path, dict[str, str]]) -> None:
    a, b, env = two_homes
    answers = Path(env["XDG_CACHE_HOME"]) / "session-lsp" / "answers-v1"
    first = listed({**env, "CLAUDE_CONFIG_DIR": str(a)}, {}, keeps=1)
    assert first == sessions_of(a / "projects") and len(first) == 4
    # the same launch again is answered from what was kept (the replay this guards is working)
    assert listed({**env, "CLAUDE_CONFIG_DIR": str(a)}, {}) == first
    other = listed({**env, "CLAUDE_CONFIG_DIR": str(b)}, {})
    print(f"kept answers: {len(kept_files(answers))}; listed over B: {len(other)} sessions (B holds 1, A 4)")
    assert other == sessions_of(b / "projects") == [ONE]


def test_a_kept_listing_is_not_replayed_for_a_folder_under_another_home(
    two_homes: tuple[Path, Path, dict[str, str]],
) -> None:
    a, b, env = two_homes
    first = listed({**env, "HOME": str(a)}, {"projectsDir": "~/projects"}, keeps=1)
    assert len(first) == 4
    assert listed({**env, "HOME": str(a)}, {"projectsDir": "~/projects"}) == first
    assert listed({**env, "HOME": str(b)}, {"projectsDir": "~/projects"}) == [ONE]
