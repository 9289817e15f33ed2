"""Message counts: any JSON spacing, and a cache that notices every change of a file, not only growth."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from storage.sessions import list_sessions

SID = "77777777-7777-4777-8777-777777777777"


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("SESSION_LSP_NO_CACHE", raising=False)


def _rows(n: int, pad: str = "") -> list[dict]:
    rows, parent = [], None
    for i in range(n):
        kind = "user" if i % 2 == 0 else "assistant"
        rows.append(
            {
                "parentUuid": parent,
                "type": kind,
                "uuid": f"u{i}",
                "message": {"role": kind, "content": [{"type": "text", "text": f"{kind} {i}{pad}"}]},
            }
        )
        parent = f"u{i}"
    return rows


def _count(projects: Path) -> int:
    return list_sessions(projects)[0].message_count


def _rewrite_in_place(path: Path, data: bytes) -> None:
    """Same inode: truncate and write, as an editor saving in place does."""
    ino = path.stat().st_ino
    with open(path, "r+b") as fh:
        fh.truncate(0)
        fh.write(data)
    assert path.stat().st_ino == ino


def test_spaced_json_is_counted(tmp_path: Path) -> None:
    path = tmp_path / "projects" / "-p" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in _rows(6)))  # ", " and ": " separators
    assert _count(tmp_path / "projects") == 6


@pytest.mark.parametrize("how", ["same-size", "bigger", "bigger-same-head"])
def test_rewritten_in_place_is_counted_again(tmp_path: Path, how: str) -> None:
    projects = tmp_path / "projects"
    path = projects / "-p" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    compact = [json.dumps(r, separators=(",", ":")) + "\n" for r in _rows(600)]
    path.write_text("".join(compact))
    assert _count(projects) == 600
    if how == "same-size":  # 100 replies become rows of another type of the same length
        lines = [ln.replace('"type":"assistant"', '"type":"assistanx"') if i < 200 else ln
                 for i, ln in enumerate(compact)]  # fmt: skip
        data = "".join(lines).encode()
        assert len(data) == path.stat().st_size
        expected = 500
    elif how == "bigger":  # every row longer, fewer rows
        data = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in _rows(500, pad=" " * 60)).encode()
        assert len(data) > path.stat().st_size
        expected = 500
    else:  # the head kept, rows dropped in the middle, longer rows at the end
        data = (
            "".join(compact[:10]).encode()
            + "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in _rows(500, pad=" " * 80)[10:]).encode()
        )
        assert len(data) > path.stat().st_size
        expected = 500
    before = path.stat()
    _rewrite_in_place(path, data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000))
    assert _count(projects) == expected
