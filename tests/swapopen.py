"""A swap made at an exact moment of a process's own file opens: just before the first `os.open` at or below a
path (by path, or by name in a folder open by descriptor). In-process and test-only: the product is unchanged."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

FOLDER_FLAGS = os.O_DIRECTORY | getattr(os, "O_PATH", 0)


def swap_at_open(
    monkeypatch: pytest.MonkeyPatch, at: Path, swap: Callable[[], None], *, files_only: bool = False
) -> list[str]:
    """Run `swap` once, just before the first `os.open` of `at` or of anything below it (with `files_only`, only
    an open that is not of a folder); returns what was being opened then."""
    real_open = os.open
    seen: list[str] = []

    def opening(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        text = os.fspath(path)
        full = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), text) if dir_fd is not None else text
        full = os.path.abspath(full)
        wanted = full == str(at) or full.startswith(f"{at}/")
        if not seen and wanted and not (files_only and flags & FOLDER_FLAGS):
            seen.append(full)
            swap()
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", opening)
    return seen
