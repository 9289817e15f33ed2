"""Counting a tool's folder listings (`server.agent.tools.walk.list_dir`): how many entries each returned."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.agent.tools import ToolContext, walk


def counting_list_dir(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record how many entries each folder listing returned."""
    sizes: list[int] = []
    real = walk.list_dir

    def counted(ctx: ToolContext, folder: Path, *args: object) -> list[walk.Entry]:
        found = real(ctx, folder, *args)  # type: ignore[arg-type]
        sizes.append(len(found))
        return found

    monkeypatch.setattr(walk, "list_dir", counted)
    return sizes
