"""Listing and walking folders under the sandbox rule of `base`: what a listing shows and what a
walk visits really lies inside the root; symlinked folders are not followed, and FIFOs, sockets
and devices are passed over, so a walk never reads or blocks on anything outside or special."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from server.agent.tools.base import ToolCancelled, ToolContext, ToolError, ToolTimedOut

SKIP_DIRS = {".git", "node_modules", ".venv", "__pycache__"}


@dataclass(frozen=True)
class Entry:
    path: Path
    """As met in the folder (a symlink's own path)."""
    real: Path
    """What it is (a symlink's target), always inside the root."""
    is_dir: bool
    is_link: bool
    special: bool
    """A FIFO, socket or device: listed by name, never read."""


def list_dir(ctx: ToolContext, folder: Path) -> list[Entry]:
    """The entries of `folder` (a real path inside the root) that the rule admits, sorted by name."""
    ctx.checkpoint()
    fd = ctx.open_dir(folder)
    try:
        with os.scandir(fd) as it:
            raw = sorted(it, key=lambda e: e.name)
    finally:
        os.close(fd)
    found: list[Entry] = []
    for e in raw:
        ctx.checkpoint()
        path = folder / e.name
        try:
            if e.is_symlink():
                real = ctx.admits(path)
                if real is None or not real.exists():
                    continue
                found.append(Entry(path, real, real.is_dir(), True, not (real.is_dir() or real.is_file())))
            else:
                is_dir = e.is_dir(follow_symlinks=False)
                special = not is_dir and not e.is_file(follow_symlinks=False)
                found.append(Entry(path, path, is_dir, False, special))
        except OSError:
            continue
    return found


def walk_files(ctx: ToolContext, base: Path) -> Iterator[Entry]:
    """Every regular file under `base` the rule admits, skipping VCS and dependency folders;
    symlinked folders are not entered, a symlinked file is yielded only if its target is inside."""
    stack = [base]
    while stack:
        folder = stack.pop()
        try:
            entries = list_dir(ctx, folder)
        except (ToolTimedOut, ToolCancelled):
            raise
        except (OSError, ToolError):
            continue  # unreadable, or swapped for a way out since it was listed
        for entry in entries:
            if entry.is_dir:
                if not entry.is_link and entry.path.name not in SKIP_DIRS:
                    stack.append(entry.path)
            elif not entry.special:
                yield entry
