"""Glob's listing of the searched folder is bounded (`server.agent.tools.glob.MAX_ENTRIES`), like Grep's.

Glob listed every file under the searched folder, held every match and sorted them all by modification time: a
folder of millions of files cost on the order of a GB and as long. Now the listing reads at most MAX_ENTRIES folder
entries (here made small, the folder a few hundred real files), says in its answer that it was cut, and keeps only
the newest MAX_RESULTS matches while reading; a folder under the bound answers as before.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from listings import counting_list_dir

from server.agent.tools import ToolContext, glob
from server.agent.tools.glob import GlobTool

BOUND = 50


def test_a_folder_with_more_files_than_the_bound_is_cut_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(glob, "MAX_ENTRIES", BOUND, raising=False)
    many = tmp_path / "many"
    many.mkdir()
    for i in range(300):
        (many / f"f{i:04d}.txt").write_text("x\n")
    (tmp_path / "sub").mkdir()
    for i in range(100):
        (tmp_path / "sub" / f"g{i:04d}.txt").write_text("x\n")
    sizes = counting_list_dir(monkeypatch)
    stats: list[Path] = []
    real_mtime = glob._mtime

    def counted_mtime(path: Path) -> float:
        stats.append(path)
        return real_mtime(path)

    monkeypatch.setattr(glob, "_mtime", counted_mtime)
    out = GlobTool().run({"pattern": "**/*.txt"}, ToolContext(tmp_path))
    assert "(Listing cut: " in out.content and str(BOUND) in out.content, out.content[-300:]
    assert out.content.endswith("Use a narrower path or pattern.)"), out.content[-300:]
    assert sum(sizes) <= BOUND, sizes  # no more entries were read and held than the bound
    assert 0 < len(stats) <= BOUND, len(stats)  # only what was listed was matched and stat'ed
    assert out.extra is not None
    assert 0 < out.extra["numFiles"] <= BOUND
    assert out.extra["filenames"] == out.content.split("\n\n(Listing cut")[0].splitlines()
    assert all(Path(name).suffix == ".txt" and Path(name).is_file() for name in out.extra["filenames"])

    out = GlobTool().run({"pattern": "**/*.absent"}, ToolContext(tmp_path))
    assert out.content.startswith("No files found") and "(Listing cut: " in out.content, out.content


def test_a_folder_under_the_bound_answers_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(glob, "MAX_ENTRIES", BOUND, raising=False)
    (tmp_path / "d").mkdir()
    for i in range(BOUND - 1):  # with the folder holding them: exactly the bound
        f = tmp_path / "d" / f"f{i:02d}.txt"
        f.write_text("x\n")
        os.utime(f, (1_000_000 + i, 1_000_000 + i))
    out = GlobTool().run({"pattern": "**/*.txt"}, ToolContext(tmp_path))
    expected = [str(tmp_path / "d" / f"f{i:02d}.txt") for i in reversed(range(BOUND - 1))]  # newest first
    assert out.content == "\n".join(expected)
    assert out.extra == {"filenames": expected, "numFiles": BOUND - 1}
    out = GlobTool().run({"pattern": "**/*.absent"}, ToolContext(tmp_path))
    assert out.content == "No files found"


def test_more_matches_than_shown_keep_the_newest_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under the bound, past MAX_RESULTS matches: the newest MAX_RESULTS, ties by name, as the full sort gave."""
    monkeypatch.setattr(glob, "MAX_RESULTS", 10)
    for i in range(40):
        f = tmp_path / f"f{i:02d}.py"
        f.write_text("x\n")
        os.utime(f, (2_000_000 + i // 3, 2_000_000 + i // 3))  # ties in threes
    out = GlobTool().run({"pattern": "*.py"}, ToolContext(tmp_path))
    every = sorted(tmp_path.glob("*.py"), key=lambda p: (-p.stat().st_mtime, str(p)))
    expected = [str(p) for p in every[:10]]
    assert out.content == "\n".join(
        [*expected, "(Results are truncated. Consider using a more specific path or pattern.)"]
    )
    assert out.extra is not None and out.extra["numFiles"] == 40
