"""The projects folders this process reads from: each as given and as its real path.

Discovery `confine`s every projects folder it lists (`storage.paths`, the index); a read of a path below one goes
through `storage.confined.open_inside`, which follows no link leading out of it. Kept for the process's life (a
forked worker inherits them); registering is idempotent and cheap (one `realpath`).
"""

from __future__ import annotations

import os
from pathlib import Path

_ROOTS: dict[str, str] = {}
"""A projects folder as it was given, and as its real path, -> its real path (absolute, as strings)."""


def confine(projects_dir: Path | str) -> Path:
    """Read files below `projects_dir` only through `storage.confined.open_inside` from now on; its real path."""
    given = os.path.abspath(os.path.expanduser(os.fspath(projects_dir)))
    real = os.path.realpath(given)  # again each time: a folder given through a link now leading elsewhere is
    if _ROOTS.get(given) != real:  # read where discovery finds it now, not where it found it first
        _ROOTS[real] = real  # no lock: each assignment is atomic (a forked worker that registered under a lock
        _ROOTS[given] = real  # another thread held at the fork would wait for ever)
    return Path(real)


def absolute(path: Path | str) -> str:
    """`path` as an absolute, normal path (`os.path.abspath`, skipped for one that is already: the common case)."""
    text = os.fspath(path)
    if text.startswith("/") and "//" not in text and "/./" not in text and "/../" not in text:
        if not text.endswith(("/.", "/..")) and (len(text) == 1 or not text.endswith("/")):
            return text
    return os.path.abspath(text)


def root_of(path: Path | str) -> tuple[str, str] | None:
    """(the confined folder as `path` names it, its real path) for a path below a confined projects folder."""
    if not _ROOTS:
        return None
    text = absolute(path)
    end = len(text)
    while (end := text.rfind("/", 0, end)) > 0:
        real = _ROOTS.get(text[:end])
        if real is not None:
            return text[:end], real
    return _aliased_root(text)


def _aliased_root(text: str) -> tuple[str, str] | None:
    """`root_of` for a path that reaches a confined folder otherwise than as registered: through a link to it, to a
    folder above it (`/proc/self/root/...`, a home reached through a link) or to a folder below it. Each folder on
    the way is resolved, outermost first; the first whose real path is a confined folder or below one names it (a
    folder below one is confined in its turn, stricter). Only a path no confined folder is a prefix of comes here:
    `storage.fileopen` would read it with a plain open, which follows a link leading out."""
    reals = set(_ROOTS.values())
    real, end = "/", 0
    while (end := text.find("/", end + 1)) > 0:  # resolved one folder at a time: one `lstat` each, not a walk
        step = os.path.join(real, text[text.rfind("/", 0, end) + 1 : end])
        real = os.path.realpath(step) if os.path.islink(step) else step
        if real in reals or any(real.startswith(root + "/") for root in reals):
            return text[:end], real
    return None
