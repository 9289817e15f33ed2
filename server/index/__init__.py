"""The live index of a projects folder and its diagnostics (no LSP types here: the server wraps it).

Its names are imported on first use, so that a light module of the package (`prefill`, which the server's early
reader starts before anything heavy is loaded) comes without the index itself.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from server.index.diagnostics import CATALOGUE, Diagnostic, Related
    from server.index.filestate import FileState
    from server.index.store import ChangeSet, ProjectIndex

_HOMES = {
    "CATALOGUE": "server.index.diagnostics",
    "Diagnostic": "server.index.diagnostics",
    "Related": "server.index.diagnostics",
    "FileState": "server.index.filestate",
    "ChangeSet": "server.index.store",
    "ProjectIndex": "server.index.store",
}

__all__ = ["CATALOGUE", "ChangeSet", "Diagnostic", "FileState", "ProjectIndex", "Related"]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
