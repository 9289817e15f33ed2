"""Write making the folders on the way to a new file: a folder swapped for a link out after the sandbox check.
Real folders and links; the swap is made at an exact moment (just before the first folder is made) by a test-only
hook on `os.mkdir`, in the spirit of `swapopen.py`: the product is unchanged."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from server.agent.tools import ToolContext, make_tools
from server.agent.tools.runner import ToolCall, run_one


def swap_at_mkdir(monkeypatch: pytest.MonkeyPatch, swap: Any) -> list[str]:
    """Run `swap` once, just before the first `os.mkdir`; returns what was being made then."""
    real_mkdir = os.mkdir
    seen: list[str] = []

    def making(path: Any, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        if not seen:
            seen.append(os.fspath(path))
            swap()
        real_mkdir(path, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "mkdir", making)
    return seen


def write(root: Path, path: Path) -> tuple[bool, str]:
    out = run_one(
        ToolCall("w1", "Write", {"file_path": str(path), "content": "x\n"}), make_tools(["Write"]), ToolContext(root)
    )
    return out.is_error, out.content


def test_write_makes_no_folder_outside_through_a_folder_swapped_for_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, outside = tmp_path / "proj", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    seen = swap_at_mkdir(monkeypatch, lambda: (root / "a").symlink_to(outside, target_is_directory=True))
    failed, said = write(root, root / "a" / "b" / "c" / "new.txt")
    assert seen, "the Write made no folder: the swap never happened"
    assert failed and "access denied" in said
    assert list(outside.iterdir()) == []  # before the fix: outside/b/c, made through the link
    assert (root / "a").is_symlink()


def test_write_still_makes_the_folders_of_a_new_file_inside(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "to-src").symlink_to(root / "src", target_is_directory=True)  # a link inside, to a folder inside
    assert write(root, root / "a" / "b" / "new.txt") == (False, f"File created successfully at: {root}/a/b/new.txt")
    assert (root / "a" / "b" / "new.txt").read_text() == "x\n"
    failed, _ = write(root, root / "to-src" / "deep" / "new.txt")
    assert not failed and (root / "src" / "deep" / "new.txt").read_text() == "x\n"
