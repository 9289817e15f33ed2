"""A transcript made append-only (`chattr +a`: it may grow, never be rewritten; a way to keep a session's history
safe) is appended to by every writer as before: the real CLI and our appends open it `O_APPEND`, which the kernel
allows. 71c375c's admission opened it `O_RDWR` without `O_APPEND` to take its lock on the file, which the kernel
refuses on an append-only file (EPERM): rename, tag, a resumed turn were refused ("cannot take the right to write
session ... (Operation not permitted)") where they had written before.

Real processes (`session-lsp rename`, `session-lsp turn --resume` against the scripted model), real files; skipped
where `chattr +a` cannot be set (it needs CAP_LINUX_IMMUTABLE, on ext4/xfs/btrfs).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import chattr_files
from turnproc import new_session, session_lsp

from storage.admission import admit


@pytest.fixture
def append_only(tmp_path: Path) -> Iterator[list[Path]]:
    """Files the test makes append-only; made ordinary again at the end."""
    yield from chattr_files(tmp_path, "a")


def _make_append_only(path: Path, made: list[Path]) -> None:
    subprocess.run(["chattr", "+a", str(path)], check=True)
    made.append(path)


def test_an_append_only_session_is_renamed_and_tagged(projects: Path, work: Path, append_only: list[Path]) -> None:
    sid, path = new_session(projects, work)
    _make_append_only(path, append_only)
    for command, value in (("rename", "kept title"), ("tag", "kept")):
        done = session_lsp(command, "--projects-dir", str(projects), sid, value, config=projects.parent)
        assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert {"type": "custom-title", "customTitle": "kept title", "sessionId": sid} in rows
    assert any(row.get("type") == "tag" and row.get("tag") == "kept" for row in rows), rows[-3:]


def test_an_append_only_session_is_resumed(projects: Path, work: Path, append_only: list[Path]) -> None:
    sid, path = new_session(projects, work)
    before = path.stat().st_size
    _make_append_only(path, append_only)
    done = session_lsp(
        "turn", "--resume", sid, "--cwd", str(work), "--projects-dir", str(projects), "--provider", "anthropic",
        "--json", "again", config=projects.parent,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert path.stat().st_size > before


def test_the_admission_holds_an_append_only_file_itself(projects: Path, work: Path, append_only: list[Path]) -> None:
    """Not merely admitted by the named lock: the file's own lock is taken, so another name of the folder is kept
    out as for any other file."""
    sid, path = new_session(projects, work)
    _make_append_only(path, append_only)
    with admit(sid, config_dir=projects.parent, register=False, transcript=path) as held:
        assert held.holds_file
