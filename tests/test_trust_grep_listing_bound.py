"""Grep's listing of the searched folder is bounded (`server.agent.tools.grep.MAX_ENTRIES`).

Grep listed every file under the searched folder and held them all before sorting, bounded only by its 60 s
timeout: a folder of millions of files cost on the order of a GB. Now the listing reads at most MAX_ENTRIES
folder entries (here made small, the folder a few hundred real files), says in its answer that it was cut,
and holds no more; a folder under the bound answers as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from listings import counting_list_dir

from server.agent.tools import ToolContext, grep, walk
from server.agent.tools.grep import GrepTool

BOUND = 50


def test_a_folder_with_more_files_than_the_bound_is_cut_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grep, "MAX_ENTRIES", BOUND, raising=False)
    many = tmp_path / "many"
    many.mkdir()
    for i in range(300):
        (many / f"f{i:04d}.txt").write_text("needle\n")
    (tmp_path / "sub").mkdir()
    for i in range(100):
        (tmp_path / "sub" / f"g{i:04d}.txt").write_text("needle\n")
    sizes = counting_list_dir(monkeypatch)
    searched: list[Path] = []
    real_search = grep._search

    def counted_search(ctx: ToolContext, entry: walk.Entry, *args: object, **kw: object) -> object:
        searched.append(entry.path)
        return real_search(ctx, entry, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(grep, "_search", counted_search)
    out = GrepTool().run({"pattern": "needle", "head_limit": 1000}, ToolContext(tmp_path))
    assert "Listing cut" in out.content and str(BOUND) in out.content, out.content[-300:]
    assert sum(sizes) <= BOUND, sizes  # no more entries were read and held than the bound
    assert 0 < len(searched) <= BOUND
    first = out.content.splitlines()[0]
    assert first == f"Found {len(searched)} files", first

    # content and count modes, and no match at all, say so too
    for mode in ("content", "count"):
        out = GrepTool().run({"pattern": "needle", "output_mode": mode}, ToolContext(tmp_path))
        assert out.content.endswith("Search a narrower path.)"), out.content[-300:]
    out = GrepTool().run({"pattern": "absent"}, ToolContext(tmp_path))
    assert out.content.startswith("No files found") and "Listing cut" in out.content


def test_a_folder_under_the_bound_answers_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grep, "MAX_ENTRIES", BOUND, raising=False)
    for i in range(BOUND - 1):  # with the folder holding them: exactly the bound
        (tmp_path / "d").mkdir(exist_ok=True)
        (tmp_path / "d" / f"f{i:02d}.txt").write_text("needle\n" if i % 2 else "hay\n")
    out = GrepTool().run({"pattern": "needle"}, ToolContext(tmp_path))
    expected = [str(tmp_path / "d" / f"f{i:02d}.txt") for i in range(1, BOUND - 1, 2)]
    assert out.content == "\n".join([f"Found {len(expected)} files", *expected])
    out = GrepTool().run({"pattern": "absent"}, ToolContext(tmp_path))
    assert out.content == "No files found"
