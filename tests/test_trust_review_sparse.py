"""A sparse file in the projects folder: a session whose sixth line is a hole of 1 TiB (`truncate`, 36 KB on disk).
Every reader read the hole's NUL bytes to find the line's end: 64 GiB took `check` 38 s and `list` 33 s, the server's
first index and full listing 47 s for 16 GB, so 1 TiB kept them busy for about ten minutes, 16 TiB for hours. A
line over the limit is now counted past a hole without reading it (`storage.linechunks.WholeLines._past_holes`: a hole
holds no newline), so what is reported is the same as for the same line written out in full.

Real `session-lsp` processes on real files, given a liveness bound (a hang detector, not a speed requirement)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import CORPUS
from turnproc import ROOT, cli_env

SID = "1c99f271-c426-49f7-9ae1-2b8728ab22c4"
LIVENESS = 120.0
HOLE = 1 << 40
DENSE = 200 << 20


def _session(projects: Path, run: int, *, sparse: bool) -> Path:
    """The corpus session with a run of `run` NUL bytes after its fifth line (a hole, or written out), ended by a
    newline."""
    lines = (CORPUS / "projects" / "-Users-me-other" / f"{SID}.jsonl").read_bytes().splitlines(keepends=True)
    path = projects / "-Users-me-other" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    with open(path, "wb") as fh:
        fh.writelines(lines[:5])
        if sparse:
            fh.seek(run, 1)
        else:
            fh.write(bytes(run))
        fh.write(b"\n")
        fh.writelines(lines[5:])
    return path


def _run(projects: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "server.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=cli_env(projects.parent), timeout=LIVENESS)


def _read(projects: Path, path: Path, run: int) -> tuple[list[str], list[dict[str, object]]]:
    checked = _run(projects, "check", str(path))
    assert checked.returncode == 1, checked.stderr[-2000:]
    listed = _run(projects, "list", "--json", "--projects-dir", str(projects))
    assert listed.returncode == 0, listed.stderr[-2000:]
    sessions = [
        {k: v for k, v in s.items() if k not in ("sizeBytes", "modified", "path", "projectDir")}
        for s in json.loads(listed.stdout)
    ]
    found = [line.replace(f"{run:,}", "RUN").replace(str(path), "FILE") for line in checked.stdout.splitlines()]
    return found, sessions


def test_a_hole_of_a_tebibyte_is_read_as_the_same_line_written_out(tmp_path: Path) -> None:
    sparse = tmp_path / "sparse" / "projects"
    dense = tmp_path / "dense" / "projects"
    path = _session(sparse, HOLE, sparse=True)
    assert path.stat().st_size > HOLE and path.stat().st_blocks * 512 < 1 << 20  # the file system keeps holes
    found, listed = _read(sparse, path, HOLE)
    assert any("line 6 is too long to read: RUN bytes" in line for line in found), found
    assert (found, listed) == _read(dense, _session(dense, DENSE, sparse=False), DENSE)
