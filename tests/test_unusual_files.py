"""Entries that are not regular files, names that are not session ids, folders as arguments:
`check` and `overview` run as real processes on a copy of the real CLI corpus."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CORPUS

SHOP = "-Users-me-shop"
PAR = "11111111-1111-4111-8111-111111111111"
LOOP = "44444444-4444-4444-8444-444444444444.jsonl"
FIFO = "55555555-5555-4555-8555-555555555555.jsonl"
GUARD = 60
"""Seconds before a hung command is killed (a hang is the failure; nothing here is timed)."""


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "server.cli", *args], capture_output=True, text=True, timeout=GUARD)


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    dest = tmp_path / "projects"
    shutil.copytree(CORPUS / "projects", dest)
    shop = dest / SHOP
    os.symlink(LOOP, shop / LOOP)  # a symlink to itself
    os.symlink("b", shop / "a")
    os.symlink("a", shop / "b")
    os.mkfifo(shop / FIFO)
    return dest


def test_check_skips_what_is_not_a_regular_file(projects: Path) -> None:
    for jobs in ("1", "2"):
        done = run("check", "--projects-dir", str(projects), "-j", jobs)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and "skipped 2 entries" in lines[0]
        assert f"{LOOP} (a symlink loop)" in lines[0] and f"{FIFO} (a FIFO)" in lines[0]
        assert done.stdout.splitlines()[-1].startswith("5 file(s) checked: 0 error(s)")


def test_overview_skips_them_too(projects: Path) -> None:
    done = run("overview", "--projects-dir", str(projects))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "skipped 2 entries" in done.stderr
    assert "4 session(s); problems: 0 error(s)" in done.stdout


def test_check_of_one_file_never_opens_a_fifo(projects: Path) -> None:
    """A link that leaves the file is looked up in its folder's other files: the FIFO is not one."""
    path = projects / SHOP / f"{PAR}.jsonl"
    with open(path, "ab") as fh:
        fh.write(b'{"type":"summary","summary":"s","leafUuid":"00000000-0000-4000-8000-000000000000"}\n')
    done = run("check", str(path))
    assert done.returncode == 0, done.stderr
    assert "[dangling-leaf]" in done.stdout
    done = run("check", str(projects / SHOP / FIFO))
    assert (done.returncode, done.stderr.strip()) == (
        2,
        f"session-lsp: {projects / SHOP / FIFO}: a FIFO, not a transcript file",
    )


def test_check_reads_the_file_it_is_given_whatever_its_name(projects: Path) -> None:
    named = projects / SHOP / "exported conversation.jsonl"
    data = (projects / SHOP / f"{PAR}.jsonl").read_bytes().split(b"\n")
    data.insert(3, b"{not json")
    named.write_bytes(b"\n".join(data))
    done = run("check", str(named), "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    assert '"code": "invalid-json"' in done.stdout and '"line": 4' in done.stdout


def test_a_folder_argument_means_every_transcript_under_it(projects: Path) -> None:
    damaged = projects / SHOP / f"{PAR}.jsonl"
    with open(damaged, "ab") as fh:
        fh.write(b"{broken\n")
    done = run("check", str(projects / SHOP))
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{damaged}:58: error:" in done.stdout
    assert done.stdout.splitlines()[-1].startswith("4 file(s) checked: 1 error(s)")  # 3 sessions, 1 subagent
    empty = projects / "-empty"
    empty.mkdir()
    done = run("check", str(empty))
    assert done.returncode == 2 and "no transcripts under" in done.stderr
