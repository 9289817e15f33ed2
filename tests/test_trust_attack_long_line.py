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

from storage.reader import MAX_TAIL, read_transcript

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
    assert done.returncode == 1, done.stderr  # the line is an error: too long to read (storage.linechunks)
    too_long = f"line 1 is too long to read: {SIZE:,} bytes so far, unfinished, over the 128 MiB a line may have"
    assert f"{LONG}.jsonl:1: error: {too_long} [line-too-long]" in done.stdout
    assert done.stdout.splitlines()[-1].startswith("6 file(s) checked: 1 error(s), 0 warning(s)")
    done = run("usage", "--projects-dir", str(planted), "--json")
    assert done.returncode == 0, done.stderr
    assert LONG not in done.stdout and "22222222-2222-4222-8222-222222222222" in done.stdout


def test_overview_keeps_no_unfinished_line_of_two_gib_in_its_index(planted: Path) -> None:
    """The index keeps where each file was read to, with the unfinished last line (to read it whole once its
    newline comes) in memory and in its database: one of 2 GiB is not kept but read again from the file."""
    done = run("overview", "--projects-dir", str(planted))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "failed" not in done.stderr
    assert "4 session(s); problems: 1 error(s), 0 warning(s)" in done.stdout


def test_an_unfinished_line_too_long_to_keep_is_read_again_whole_once_it_ends(tmp_path: Path) -> None:
    """The state after a long unfinished row keeps none of its bytes, and the next read (the index's, as the row's
    newline comes) still gives exactly the rows a read of the whole file gives."""
    path = tmp_path / f"{LONG}.jsonl"
    first = b'{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"hi"}}\n'
    long = (
        b'{"type":"assistant","uuid":"u2","parentUuid":"u1","sessionId":"s","message":{"role":"assistant","content":"'
    )
    long += b"x" * (2 * MAX_TAIL) + b'"}}'
    path.write_bytes(first + long)
    before = read_transcript(path)
    assert [r.uuid for r in before.rows] == ["u1", "u2"] and before.provisional is before.rows[-1]
    assert before.state.tail == b"" and before.state.offset == len(first)
    with open(path, "ab") as fh:
        fh.write(
            b'\n{"type":"user","uuid":"u3","parentUuid":"u2","sessionId":"s","message":{"role":"user","content":"ok"}}\n'
        )
    after = read_transcript(path, before.state)
    whole = read_transcript(path)
    assert [(r.uuid, r.line, r.offset, r.length) for r in after.rows] == [
        (r.uuid, r.line, r.offset, r.length) for r in whole.rows[1:]
    ]
    assert after.state == whole.state and after.provisional is None


def test_an_untouched_file_whose_unfinished_line_is_too_long_to_keep_is_unchanged(tmp_path: Path) -> None:
    """The index's read stops at the start of such a line: the file, as it was read, is not read again nor
    reported changed by the next update (each rescan re-parsed the whole line under the index's lock and sent
    the session as changed), and an append to it is still read."""
    from server.index.store import ProjectIndex

    folder = tmp_path / "projects" / "-p"
    folder.mkdir(parents=True)
    path = folder / f"{LONG}.jsonl"
    first = b'{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"hi"}}\n'
    path.write_bytes(first + b'{"type":"user","uuid":"u2","message":"' + b"y" * (MAX_TAIL + 1))
    os.utime(path, ns=(1_700_000_000_000_000_000,) * 2)  # settled: its mtime long past
    index = ProjectIndex(tmp_path / "projects", persist=False)
    assert path in index.update_file(path).changed
    for _ in range(3):
        assert index.update_file(path).changed == set()
    with open(path, "ab") as fh:
        fh.write(b'"}\n{"type":"user","uuid":"u3","parentUuid":"u2","sessionId":"s","message":"ok"}\n')
    assert path in index.update_file(path).changed
    assert [r.uuid for r in index.files[path].transcript.rows] == ["u1", "u2", "u3"]
