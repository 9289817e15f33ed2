"""The real CLI's registry of live sessions (`<config>/sessions/<pid>.json`) is read before every
write we admit. A record that is a FIFO, or a link to an endless device, must not hang or swamp
the writer: it is skipped like a damaged record. The real command line in a child process."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CORPUS

S1 = "11111111-1111-4111-8111-111111111111"
REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("planted", ["fifo", "link to /dev/zero"])
def test_a_registry_record_that_is_no_file_is_skipped(tmp_path: Path, planted: str) -> None:
    config = tmp_path / "config"
    shutil.copytree(CORPUS / "projects", config / "projects")
    registry = config / "sessions"
    registry.mkdir(mode=0o700)
    record = registry / f"{os.getpid()}.json"  # a live pid, so the record is read
    if planted == "fifo":
        os.mkfifo(record)
    else:
        record.symlink_to("/dev/zero")
    try:
        out = subprocess.run(
            [sys.executable, "-m", "server.cli", "rename", S1, "renamed", "--projects-dir", str(config / "projects")],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=30,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"rename hung reading the registry record ({planted})")
    assert out.returncode == 0, out.stderr
    assert b'"customTitle":"renamed"' in next((config / "projects").rglob(f"{S1}.jsonl")).read_bytes()
