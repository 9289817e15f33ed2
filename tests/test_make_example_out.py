"""scripts/make_example.py wipes the folder it writes the example into: it refuses, before running
anything, a folder that holds more than an earlier example (a real projects folder, a home)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import TESTS

SCRIPT = TESTS.parent / "scripts" / "make_example.py"
SID = "1c99f271-c426-49f7-9ae1-2b8728ab22c4"
ROW = '{"type":"user","sessionId":"' + SID + '"}\n'


def make(out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), "--out", str(out)], capture_output=True, text=True, timeout=600)


def test_a_folder_with_other_sessions_is_not_wiped(tmp_path: Path) -> None:
    projects = tmp_path / "config" / "projects"
    mine = projects / "-Users-me-work" / f"{SID}.jsonl"
    mine.parent.mkdir(parents=True)
    mine.write_text(ROW, encoding="utf-8")
    (projects / "-home-dev-ledger").mkdir()  # beside an earlier example

    done = make(projects)  # on main: the story runs, then the whole folder is deleted
    assert done.returncode == 1, done.stderr
    assert "holds more than an earlier example (-Users-me-work)" in done.stderr
    assert mine.read_text(encoding="utf-8") == ROW

    (tmp_path / "file").write_text("x", encoding="utf-8")
    done = make(tmp_path / "file")
    assert done.returncode == 1 and "not a folder" in done.stderr
    assert (tmp_path / "file").read_text(encoding="utf-8") == "x"
