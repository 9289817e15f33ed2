"""A session file that is one line of 2 GiB (a sparse file: it costs no disk and no time to plant) beside the real
CLI corpus. Every reader of the command line must get through it in time linear in its size and keep going; real
processes on real files. Nothing is timed: the bound is a hang detector (before the fix `check` took over six
minutes on it, `list` three, `overview` ended with an OverflowError storing the unfinished line in the index)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HANG = 240.0
"""Seconds after which a command is taken for hung (it needs about 20 s on a loaded machine)."""
LONG = "aaaaaaaa-0000-4000-8000-000000000009"
SIZE = 2 << 30

pytestmark = pytest.mark.slow


@pytest.fixture
def planted(corpus_projects: Path) -> Path:
    """The corpus, and a project whose session file is one 2 GiB line that never ends (NUL bytes, sparse)."""
    folder = corpus_projects / "-Users-me-planted"
    folder.mkdir(mode=0o700)
    with open(folder / f"{LONG}.jsonl", "wb") as fh:
        fh.write(b'{"type":"user","sessionId":"' + LONG.encode() + b'","message":{"role":"user","content":"')
        fh.truncate(SIZE)
    return corpus_projects


def run(*args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [sys.executable, "-m", "server.cli", *args], capture_output=True, text=True, timeout=HANG, env=os.environ
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"`session-lsp {' '.join(args)}` hung on a 2 GiB line (no answer within {HANG:g} s)")


def test_check_and_usage_read_a_two_gib_line_in_linear_time(planted: Path) -> None:
    done = run("check", "--projects-dir", str(planted))
    assert done.returncode == 0, done.stderr
    assert f"{LONG}.jsonl:1: warning: the last line is unfinished and does not parse [torn-tail]" in done.stdout
    assert done.stdout.splitlines()[-1].startswith("6 file(s) checked: 0 error(s), 1 warning(s)")
    done = run("usage", "--projects-dir", str(planted), "--json")
    assert done.returncode == 0, done.stderr
    assert LONG not in done.stdout and "22222222-2222-4222-8222-222222222222" in done.stdout
