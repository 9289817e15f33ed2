"""Answers kept for a projects folder that did not change: the server's `sessions/list` and
`workspace/diagnostic`, and the command line's `list --json`.

Each answer depends only on the request, the code (`server.lsp.codestamp`) and the files below the projects
folder (`storage.folderstamp`). When one is computed from a complete index, with the folder settled and the same
before and after, it is kept (`answers-v1/<key>.json` in the cache folder, 0600) under the folder's digest. The
next launch answers the same request at once when the folder's digest is still the same: the server before
pygls is loaded (`server.lsp.early`), the command before it opens the index (`server.commands.read`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from server.lsp.codestamp import code_stamp
from server.lsp.paramshape import conforms
from storage.cache import cache_dir, open_private_folder, save_bytes
from storage.folderstamp import FolderStamp, stamp_folder

if TYPE_CHECKING:
    from server.index.store import ProjectIndex

FOLDER_NAME = "answers-v1"
KEPT = ("sessions/list", "workspace/diagnostic")
"""The requests whose answers are kept."""
IGNORED_PARAMS = {"workspace/diagnostic": ("previousResultIds", "identifier", "workDoneToken", "partialResultToken")}
"""Parameters the server's answer does not depend on (every report is sent whole, to every client)."""
CHECKED = ("workspace/diagnostic",)
"""Requests whose params pygls structures with lsprotocol's type, refusing those that do not fit."""
KEEP_FILES = 16
"""Answers kept at most (the oldest go first)."""


def answer_key(method: str, params: Any, root: Path) -> str | None:
    """The key of a request's kept answer over the projects folder `root`; None for one never kept."""
    if method not in KEPT:
        return None
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return None
    ignored = IGNORED_PARAMS.get(method, ())
    return _key(method, {k: v for k, v in params.items() if k not in ignored}, root)


def taken_by_pygls(method: str, params: Any) -> bool:
    """Whether pygls takes these params of `method` rather than answering an error: a kept answer is sent only then,
    the parameters its key leaves out included (`server.lsp.paramshape`)."""
    return method not in CHECKED or conforms(method, params)


def command_key(command: str, args: dict[str, Any], root: Path) -> str:
    """The key of a command's kept output over the projects folder `root` (never the key of a request)."""
    return _key(f"command {command}", args, root)


def _key(name: str, request: dict[str, Any], root: Path) -> str:
    text = json.dumps([code_stamp(), name, request, str(root)], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _file(key: str) -> Path | None:
    folder = cache_dir()
    return None if folder is None else folder / FOLDER_NAME / f"{key}.json"


HEAD = re.compile(rb'\{"folder":\s*"([0-9a-f]{1,128})",\s*"result":\s*')
"""A kept answer's file: `{"folder": DIGEST, "result": RESULT}`, the digest first so it is read without the rest."""


def kept_answer(key: str, stamp: FolderStamp) -> bytes | None:
    """The JSON of the answer kept under `key` for a folder with this stamp (None: none, kept for another state,
    or damaged), to be sent as it is."""
    path = _file(key)
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    m = HEAD.match(data)
    if m is None or m.group(1).decode() != stamp.digest:
        return None
    result = data[m.end() :].rstrip()
    if not result.endswith(b"}"):
        return None
    result = result[:-1]
    try:
        orjson.loads(result)  # never send a damaged file's bytes
    except orjson.JSONDecodeError:
        return None
    return result


def keep_answer(key: str, before: FolderStamp, after: FolderStamp | None, result: bytes) -> bool:
    """Keep `result` (JSON), computed between the two stamps, when they are equal and settled; True when kept."""
    path = _file(key)
    if path is None or after is None or not before.settled or before.digest != after.digest:
        return False
    data = b'{"folder":"%s","result":%s}' % (before.digest.encode(), result)
    if not save_bytes(path, data):
        return False
    _prune(path.parent)
    return True


def keep_computed(key: str, before: FolderStamp, index: ProjectIndex, result: bytes) -> bool:
    """Keep `result`, computed from the complete `index` since the folder had the stamp `before`, when the index
    holds what discovery finds now, each file as `before` saw it, and the folder has not changed since."""
    with index.lock:
        held = {str(p): (s.device, s.inode, s.size, s.mtime_ns, s.ctime_ns) for p, s in index.files.items()}
        found = {str(p) for p in index.discover()}
    if held.keys() != found or any(before.files.get(p) != ident for p, ident in held.items()):
        return False
    return keep_answer(key, before, stamp_folder(index.projects_dir), result)


def _prune(folder: Path) -> None:
    """Keep the newest `KEEP_FILES` answers. The folder is opened by descriptor (`open_private_folder`) and listed
    and pruned through it: one swapped for a link out since is never listed nor pruned."""
    try:
        fd = open_private_folder(folder)
    except OSError:
        return
    try:
        with os.scandir(fd) as it:
            entries = [(e.stat(follow_symlinks=False).st_mtime_ns, e.name) for e in it if e.name.endswith(".json")]
        for _, name in sorted(entries, reverse=True)[KEEP_FILES:]:
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=fd)
    except OSError:
        return
    finally:
        os.close(fd)
