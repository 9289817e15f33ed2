"""Store writes stopped midway by SIGKILL, in real child processes (`tests/killhook` stops each at one
deterministic point: just after the first file is created, or just before the written data is linked or renamed
into place). What is left is never part of a session under the session's own name; the CLI's view of the folder
(discovery, `storage.paths`) lists nothing of it; the next run writes the session whole and leaves nothing behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from storage.paths import iter_project_dirs, iter_session_files, subagent_files
from storage.store_materialize import StoreSession, session_files

REPO = Path(__file__).resolve().parent.parent
HOOK = Path(__file__).resolve().parent / "killhook"
PROJECT = "-work-proj"
SID = "0b8e6bd1-6a2b-4a47-9f5e-1f0ad2a41c11"
ENTRIES = [{"type": "user", "uuid": f"u{n}", "sessionId": SID, "n": n, "text": "é" * 300} for n in range(40)]
SUBKEYS = {"subagents/agent-a1": [{"type": "user", "uuid": "a1", "sessionId": SID, "isSidechain": True}]}

WRITE_SESSION = """
import sys
from pathlib import Path
from storage.store_materialize import StoreSession, write_session
project, sid, entries, subkeys = __import__("json").loads(sys.stdin.read())
print(write_session(Path(sys.argv[1]), StoreSession(project, sid, entries, subkeys)))
"""

MIRROR_SESSION = """
import json, sys
from storage.pgstore import StreamTail
from storage.store_mirror import StoreMirror
from server.index.storefeed import new_mirror_base
project, sid, entries, subkeys = json.loads(sys.stdin.read())
base = new_mirror_base()
print(base, flush=True)
tails = [StreamTail(sid, "", 1, 1_700_000_000_000, 0, entries)]
tails += [StreamTail(sid, sub, 2 + n, 1_700_000_000_000, 0, rows) for n, (sub, rows) in enumerate(subkeys.items())]
change, stale = StoreMirror(base / "mirror").apply(project, [sid], tails)
assert not stale and change.written, (change, stale)
"""


def run(
    script: str, *args: str, env: dict[str, str], kill_at: str = "", under: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **env, "PYTHONPATH": str(REPO)}
    if kill_at:
        env.update(PYTHONPATH=f"{HOOK}:{REPO}", KILL_AT=kill_at, KILL_UNDER=str(under))
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        input=json.dumps([PROJECT, SID, ENTRIES, SUBKEYS]),
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )


def listed(projects: Path) -> list[str]:
    """What discovery lists under `projects`: session files and their subagent files."""
    found = []
    for folder in iter_project_dirs(projects):
        for session in iter_session_files(folder):
            found.append(str(session.relative_to(projects)))
            found += [str(s.path.relative_to(projects)) for s in subagent_files(session)]
    return sorted(found)


def files_under(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def expected_files() -> dict[str, bytes]:
    return {str(k): v for k, v in session_files(StoreSession(PROJECT, SID, ENTRIES, SUBKEYS)).items()}


@pytest.mark.parametrize("kill_at", ["create", "place"])
def test_a_store_session_write_killed_midway_leaves_no_session_and_the_next_run_cleans_up(
    tmp_path: Path, kill_at: str
) -> None:
    projects = tmp_path / "projects"
    (projects / "-other").mkdir(parents=True)
    killed = run(WRITE_SESSION, str(projects), env={}, kill_at=kill_at, under=projects)
    assert killed.returncode == -signal.SIGKILL, (killed.stdout, killed.stderr)
    left = files_under(projects)
    main = f"{PROJECT}/{SID}.jsonl"
    assert main not in left  # the session is not there under its own name, whole or in part
    (temporary,) = left  # a temporary file only, beside it (empty or whole)
    assert temporary.startswith(f"{PROJECT}/.{SID}.jsonl.") and temporary.endswith(".tmp"), temporary
    assert left[temporary] in (b"", expected_files()[main])
    assert listed(projects) == []

    again = run(WRITE_SESSION, str(projects), env={})
    assert again.returncode == 0, again.stderr
    assert files_under(projects) == expected_files()  # whole, and the killed run's temporary file is gone
    assert listed(projects) == [main, f"{PROJECT}/{SID}/subagents/agent-a1.jsonl"]


@pytest.mark.parametrize("kill_at", ["create", "place"])
def test_a_store_mirror_write_killed_midway_leaves_no_session_and_the_next_server_removes_it(
    tmp_path: Path, kill_at: str
) -> None:
    cache = tmp_path / "cache"
    env = {"XDG_CACHE_HOME": str(cache)}
    killed = run(MIRROR_SESSION, env=env, kill_at=kill_at, under=cache / "session-lsp" / "store-mirrors")
    assert killed.returncode == -signal.SIGKILL, (killed.stdout, killed.stderr)
    base = Path(killed.stdout.strip())
    mirror = base / "mirror"
    left = files_under(mirror)
    assert f"{PROJECT}/{SID}.jsonl" not in left  # never a part-written session under its own name
    assert list(left) == [f"{PROJECT}/.{SID}.jsonl.tmp"]
    assert listed(mirror) == []

    again = run(MIRROR_SESSION, env=env)
    assert again.returncode == 0, again.stderr
    assert not base.exists()  # the killed process's mirror is removed by the next one
    fresh = Path(again.stdout.strip()) / "mirror"
    assert files_under(fresh) == expected_files()  # the next server's mirror holds the session whole
    assert listed(fresh) == [f"{PROJECT}/{SID}.jsonl", f"{PROJECT}/{SID}/subagents/agent-a1.jsonl"]
