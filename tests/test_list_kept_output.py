"""`list --json` printed again from the output kept for the projects folder as it was (`server.lsp.answers`), as
a real process would run it. A kept output is marked on disk, so output carrying the mark came from the store;
output without it was computed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import age

ROOT = Path(__file__).resolve().parents[1]
MARK = {"kept-output-mark": True}


@pytest.fixture
def kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("SESSION_LSP_NO_CACHE", raising=False)
    return tmp_path / "cache" / "session-lsp" / "answers-v1"


def listed(projects: Path, *extra: str) -> list[dict[str, Any]]:
    out = subprocess.run(
        [sys.executable, "-m", "server.cli", "list", "--json", "--projects-dir", str(projects), *extra],
        capture_output=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    value = json.loads(out.stdout)
    assert isinstance(value, list)
    return value


def mark(kept: Path) -> int:
    files = sorted(kept.glob("*.json"))
    for f in files:
        entry = json.loads(f.read_bytes())
        entry["result"].append(MARK)
        f.write_text(json.dumps(entry))
    return len(files)


def test_an_unchanged_folder_prints_the_kept_output(corpus_projects: Path, kept: Path) -> None:
    age(corpus_projects)
    first = listed(corpus_projects)
    assert len(first) == 4 and mark(kept) == 1
    again = listed(corpus_projects)
    assert again == [*first, MARK]


def test_a_changed_session_is_listed_again(corpus_projects: Path, kept: Path) -> None:
    age(corpus_projects)
    first = listed(corpus_projects)
    mark(kept)
    path = Path(next(s["path"] for s in first if s["messageCount"] > 0))
    with path.open("ab") as fh:
        fh.write(b'{"type":"custom-title","customTitle":"renamed since","sessionId":"%s"}\n' % path.stem.encode())
    age(corpus_projects)
    again = listed(corpus_projects)
    assert MARK not in again
    assert {s["title"] for s in again} - {s["title"] for s in first} == {"renamed since"}


def test_a_folder_written_to_just_now_is_not_kept(corpus_projects: Path, kept: Path) -> None:
    age(corpus_projects)
    os.utime(next(corpus_projects.rglob("*.jsonl")))  # written to just now
    first = listed(corpus_projects)
    assert mark(kept) == 0
    assert listed(corpus_projects) == first


def test_each_cwd_has_its_own_output(corpus_projects: Path, kept: Path) -> None:
    age(corpus_projects)
    whole = listed(corpus_projects)
    cwd = next(s["cwd"] for s in whole if s["cwd"])
    some = listed(corpus_projects, "--cwd", cwd)
    assert mark(kept) == 2 and 0 < len(some) < len(whole)
    assert listed(corpus_projects, "--cwd", cwd) == [*some, MARK]
    assert listed(corpus_projects) == [*whole, MARK]


def test_a_damaged_kept_output_is_computed_again(corpus_projects: Path, kept: Path) -> None:
    age(corpus_projects)
    first = listed(corpus_projects)
    (f,) = kept.glob("*.json")
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    assert listed(corpus_projects) == first


def test_a_rewrite_with_its_mtime_put_back_is_listed_again(corpus_projects: Path, kept: Path) -> None:
    """Same size, same mtime (put back as `cp -p` or `touch -r` put it), another title: only the ctime shows it."""
    age(corpus_projects)
    assert len(listed(corpus_projects)) == 4 and mark(kept) == 1
    path = next(corpus_projects.rglob("11111111-*.jsonl"))
    before = os.stat(path)
    data = path.read_bytes()
    assert data.count(b"ORACLE 11111111") >= 1
    path.write_bytes(data.replace(b"ORACLE 11111111", b"ORACLX 11111111"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (os.stat(path).st_size, os.stat(path).st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    again = listed(corpus_projects)
    assert MARK not in again  # computed again, and from the file: the index database sees the change time too
    item = json.dumps(next(s for s in again if s["path"] == str(path)))
    assert "ORACLX 11111111" in item and "ORACLE 11111111" not in item, item
