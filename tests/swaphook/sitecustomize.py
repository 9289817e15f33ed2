"""A test hook, loaded only by the tests that put this folder on a server's PYTHONPATH: the first time the module
`$SWAP_MODULE` opens `$SWAP_TARGET` for reading (its `open_regular`, replaced here at start-up), `$SWAP_TARGET` is
first moved to `$SWAP_MOVED` and replaced by a symlink to `$SWAP_OUTSIDE`: a file swapped for a link out between
discovery and that reader's read, every time, in the server or in a worker it forks."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

_TARGET = os.environ.get("SWAP_TARGET")

if _TARGET:
    _module = importlib.import_module(os.environ["SWAP_MODULE"])
    _open = _module.open_regular

    def _swap_then_open(path: Path | str) -> Any:
        target = Path(str(_TARGET))
        if Path(path) == target and not target.is_symlink():
            target.rename(os.environ["SWAP_MOVED"])
            target.symlink_to(os.environ["SWAP_OUTSIDE"])
        return _open(path)

    _module.open_regular = _swap_then_open
