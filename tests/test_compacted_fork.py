"""A real `--fork-session` copy of a compacted session, made by the real CLI 2.1.328 against the scripted
test model: the copy starts at its source's compact boundary, not at its first row, and
`session-lsp list --json` and `overview` still name its source; the boundaries are kept in the
persistent index, and looked for only once a session of the folder starts at one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from scripted_api import ScriptedModelServer

from storage.indexdb import IndexDB

try:
    from realcli import find_claude, run_claude
except ImportError:  # pragma: no cover
    from tests.realcli import find_claude, run_claude

ROOT = Path(__file__).resolve().parents[1]
SOURCE = "5c0aa0c1-7e55-4b1e-9d0a-3f2e1c0d9b8a"
FLAGS = ["--bare", "--system-prompt", "You are driven by a scripted test model. Be brief.", "--tools", "Read"]


def claude_step(work: Path, config: Path, model: ScriptedModelServer, *args: str) -> None:
    claude = find_claude()
    if claude is None:
        print("\nREAL CLI NOT AVAILABLE: compacted fork SKIPPED", file=sys.stderr)
        pytest.skip("REAL CLI NOT AVAILABLE: run scripts/setup.d/claude-cli.sh")
    done = run_claude([*args, *FLAGS], cwd=work, config_dir=config, base_url=model.base_url, claude=claude,
                      allowed_tools=None)  # fmt: skip
    assert done.returncode == 0, done.stderr


def session_lsp(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "server.cli", *args], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def listed(projects: Path) -> dict[str, Any]:
    out = json.loads(session_lsp("list", "--json", "--projects-dir", str(projects)))
    sessions = out["sessions"] if isinstance(out, dict) else out
    return {s["sessionId"]: s for s in sessions}


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def stored(path: Path) -> dict[str, Any]:
    db = IndexDB.open()
    assert db is not None
    try:
        info = db.files([str(path)])[str(path)].info
    finally:
        db.close()
    assert info is not None
    return info


def test_list_and_overview_link_a_fork_of_a_compacted_session(tmp_path: Path) -> None:
    work, config = tmp_path / "work", tmp_path / "config"
    work.mkdir()
    with ScriptedModelServer() as model:
        claude_step(work, config, model, "first prompt", "--session-id", SOURCE)
        claude_step(work, config, model, "/compact", "--resume", SOURCE)
        claude_step(work, config, model, "after the compaction", "--resume", SOURCE)
        (folder,) = (config / "projects").iterdir()
        source = folder / f"{SOURCE}.jsonl"
        assert list(listed(config / "projects")) == [SOURCE]
        assert stored(source)["compact_uuids"] is None  # no session starts at a boundary: nothing scanned
        claude_step(work, config, model, "hello from the fork", "--resume", SOURCE, "--fork-session")

    (fork,) = set(folder.glob("*.jsonl")) - {source}
    boundaries = [r["uuid"] for r in rows(source) if r.get("subtype") == "compact_boundary"]
    first_of_fork = next(r for r in rows(fork) if "uuid" in r)
    first_of_source = next(r for r in rows(source) if "uuid" in r)
    assert len(boundaries) == 1 and first_of_fork["uuid"] == boundaries[0] != first_of_source["uuid"]

    sessions = listed(config / "projects")
    assert sessions[fork.stem]["forkedFrom"] == {"sessionId": SOURCE, "messageUuid": None}
    assert sessions[SOURCE]["forkedFrom"] is None
    assert stored(source)["compact_uuids"] == boundaries
    assert stored(source)["compact_scanned"] == source.stat().st_size
    assert stored(fork)["forked_from"] is None  # the link is made at each listing, not stored

    again = listed(config / "projects")  # from the index, without scanning the source again
    assert again[fork.stem]["forkedFrom"] == {"sessionId": SOURCE, "messageUuid": None}

    overview = session_lsp("overview", "--projects-dir", str(config / "projects"))
    fork_part = overview.split(fork.stem, 1)[1].split("=" * 100, 1)[0]
    assert f"forked from {SOURCE}" in fork_part
