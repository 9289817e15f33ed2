"""Listing and walking folders under the sandbox rule of `base`: what a listing shows and what a
walk visits really lies inside the root; symlinked folders are not followed, and FIFOs, sockets
and devices are passed over, so a walk never reads or blocks on anything outside or special.

A `Budget` bounds what a walk reads: past its number of folder entries, folders are no longer read (a folder
is read no further) and `cut` says so, so a folder of millions of files costs no more than the budget."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
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


@dataclass
class Budget:
    """How many more folder entries a walk may read; `cut` once one was left unread for want of it."""

    entries: int
    cut: bool = False
    limit: int = field(init=False)
    """The entries it started with."""

    def __post_init__(self) -> None:
        self.limit = self.entries

    def note(self, base: Path, unread: str, advice: str) -> str:
        """What a tool's answer ends with when the listing under `base` was cut ("" when it was not): the rest
        `unread` ("not searched"), then `advice`."""
        if not self.cut:
            return ""
        listed = f"{self.limit} files and folders under {base} were listed"
        return f"\n\n(Listing cut: {listed}, the rest {unread}. {advice})"


def list_dir(ctx: ToolContext, folder: Path, budget: Budget | None = None) -> list[Entry]:
    """The entries of `folder` (a real path inside the root) that the rule admits, sorted by name. With a
    `budget`, at most `budget.entries` are read (and taken from it): the rest of the folder is not."""
    ctx.checkpoint()
    fd = ctx.open_dir(folder)
    kinds: list[tuple[str, bool, bool, bool]] = []
    try:
        with os.scandir(fd) as it:
            for e in it:  # the entry types are read while the folder is open (some need a stat in it)
                if budget is not None:
                    if budget.entries <= 0:
                        budget.cut = True
                        break
                    budget.entries -= 1
                try:
                    link = e.is_symlink()
                    kinds.append(
                        (e.name, link, not link and e.is_dir(follow_symlinks=False), e.is_file(follow_symlinks=False))
                    )
                except OSError:
                    continue
    finally:
        os.close(fd)
    found: list[Entry] = []
    for name, link, is_dir, is_file in sorted(kinds):
        ctx.checkpoint()
        path = folder / name
        if not link:
            found.append(Entry(path, path, is_dir, False, not (is_dir or is_file)))
            continue
        real = ctx.admits(path)
        if real is None or not real.exists():
            continue
        found.append(Entry(path, real, real.is_dir(), True, not (real.is_dir() or real.is_file())))
    return found


def walk_files(ctx: ToolContext, base: Path, budget: Budget | None = None) -> Iterator[Entry]:
    """Every regular file under `base` the rule admits, skipping VCS and dependency folders;
    symlinked folders are not entered, a symlinked file is yielded only if its target is inside.
    With a `budget`, no more folder entries than it holds are read (`Budget.cut` says some were not)."""
    stack = [base]
    while stack:
        folder = stack.pop()
        if budget is not None and budget.entries <= 0:
            budget.cut = True  # a folder left unread
            break
        try:
            entries = list_dir(ctx, folder, budget)
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
