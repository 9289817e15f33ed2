"""Attacks on how we write into a transcript after the path was decided: a hard link that makes a
file outside the projects folder one with a session file, and a project folder swapped for a symlink
while a turn writes (here by the model's own Bash call). Real files, the real `session-lsp` command
line and the scripted test model on loopback; each test checks that nothing outside changed."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CORPUS

SHOP = "-Users-me-shop"
S1 = "11111111-1111-4111-8111-111111111111"
LINKED = "88888888-8888-4888-8888-888888888888"
REPO = Path(__file__).resolve().parent.parent


def digest_tree(root: Path) -> dict[str, str]:
    """Every file under `root` (symlinks not followed) with a hash of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server.cli", *args], capture_output=True, text=True, cwd=REPO, timeout=120
    )


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    """A projects folder with a real session; outside it a transcript that a session file of the
    projects folder is a hard link of (same file system, so one inode under two names)."""
    projects = tmp_path / "config" / "projects"
    shutil.copytree(CORPUS / "projects", projects)
    outside = tmp_path / "outside"
    outside.mkdir()
    body = (projects / SHOP / f"{S1}.jsonl").read_bytes().replace(S1.encode(), LINKED.encode())
    (outside / "backup.jsonl").write_bytes(body)
    os.link(outside / "backup.jsonl", projects / SHOP / f"{LINKED}.jsonl")
    work = tmp_path / "work"
    work.mkdir()
    return {"projects": projects, "outside": outside, "work": work, "tmp": tmp_path}


def test_no_write_goes_through_a_hard_link_to_a_file_outside(world: dict[str, Path]) -> None:
    projects, outside = world["projects"], world["outside"]
    before = digest_tree(outside)
    for args in (
        ["rename", LINKED, "pwned"],
        ["tag", LINKED, "pwned"],
        ["turn", "--resume", LINKED, "--provider", "anthropic", "--cwd", str(world["work"]), "hello"],
    ):
        out = cli(*args, "--projects-dir", str(projects))
        assert out.returncode == 2, (args, out.stdout, out.stderr)
        assert out.stderr.count("\n") == 1 and "hard link" in out.stderr, (args, out.stderr)
    assert digest_tree(outside) == before
    # reading it is still fine: the bytes are the same under either name
    out = cli("chain", LINKED, "--projects-dir", str(projects), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["sessionId"] == LINKED

