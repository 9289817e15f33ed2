"""Session metadata written outside a recording: `custom-title` (rename) and `tag` rows appended
as the CLI appends them, and private JSON sidecars."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from storage.access import open_decided_folder
from storage.admission import admit
from storage.errors import NotFound
from storage.jsonline import dump_line
from storage.livesession import config_dir_of
from storage.wholefile import put_whole
from storage.writequeue import TornTail, append_lines


def write_private_json(path: Path, value: Any) -> None:
    """Write a small JSON file atomically, mode 0600, its folders 0700; `path` is decided
    (`storage.access`), and written through its folder opened by `open_decided_folder`, so a folder
    swapped for a symlink since takes nothing out."""
    write_private_json_in(open_decided_folder(path.parent, made=[]), path, value)


def write_private_json_in(folder: int, path: Path, value: Any) -> None:
    """Write `path`'s file as `write_private_json` does, by name in the folder open as `folder` (closed here): put in
    place whole (`storage.wholefile`)."""
    try:
        put_whole(folder, path.name, orjson.dumps(value), path, replace=True)
    finally:
        os.close(folder)


def append_metadata(
    path: Path, entry: dict[str, Any], *, config_dir: Path | None = None, fsync: bool = False
) -> TornTail | None:
    """Append one metadata row to a session file decided by `storage.access.resolve_target`,
    unless another writer holds it (`storage.admission`)."""
    path = Path(path)
    if not path.is_file():
        raise NotFound(f"no session file {path}")
    config = config_dir if config_dir is not None else config_dir_of(path.parent.parent)
    with admit(path.stem, config_dir=config, register=False, transcript=path):
        # the file exists: if it is moved away meanwhile, nothing is made in its place (`Vanished`)
        return append_lines(path, dump_line({**entry, "sessionId": path.stem}), fsync=fsync, create=False)


def rename_session(path: Path, title: str, **kw: Any) -> TornTail | None:
    """`/rename`: a `custom-title` row (last one wins)."""
    return append_metadata(path, {"type": "custom-title", "customTitle": title}, **kw)


def tag_session(path: Path, tag: str, **kw: Any) -> TornTail | None:
    """`/tag`: a `tag` row (last one wins)."""
    return append_metadata(path, {"type": "tag", "tag": tag}, **kw)
