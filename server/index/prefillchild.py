"""The process that indexes a projects folder for the first time while the language server starts
(`server.index.prefill` starts it, and reads what it writes).

A fresh interpreter (started with `-I`, our own package first on its path: nothing of the editor's working
folder is imported), not a fork: the server's early process keeps one core for the requests it answers before
pygls loads, this one builds the first index on the other with its worker processes (`server.index.fill`),
and neither waits for the other's interpreter lock. It ends with the server (Linux's parent-death signal, and
it leaves when its parent is gone) and, with it, its workers.

It writes to standard output, one message a line: `p DONE TOTAL READ SIZE` as files are read, `i` once the
index is stored (every file restored from the database), `r LENGTH` followed by that many bytes, the JSON of
the `workspace/diagnostic` report of the folder as the server gives it, which it also keeps for the next launch
(`server.lsp.answers`), and `e TEXT` when it failed. It then stores the listing (`fill`'s second part) and
exits.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import BinaryIO

from server.prctl import die_with_parent

PROGRESS_EVERY = 0.05
"""Seconds between progress messages at most (and one per 50 files)."""


def _write(out: BinaryIO, data: bytes) -> None:
    out.write(data)
    out.flush()


def main(argv: list[str]) -> int:
    root, parent, encoding = Path(argv[0]), int(argv[1]), argv[2]
    die_with_parent(parent)
    out = sys.stdout.buffer
    try:
        ours = f"{sys.getfilesystemencoding()}:{sys.getfilesystemencodeerrors()}"
        if ours != encoding:  # file names would be read otherwise than the server reads them
            raise RuntimeError(f"file names decode as {ours} here, as {encoding} in the server")
        _index(root, out)
    except Exception as exc:  # the server's own first index reads what this did not store
        text = " ".join(f"{type(exc).__name__}: {exc}".split())
        _write(out, b"e %s\n" % text.encode("utf-8", "backslashreplace"))
        return 1
    from storage.indexdb import FILLS

    FILLS.wait()  # the listing, stored by the fill's own thread
    return 0


def _index(root: Path, out: BinaryIO) -> None:
    from pygls.uris import from_fs_path  # as the server writes URIs (pygls.uris loads no lsprotocol)

    from server.features.diagnosticreport import workspace_report_json
    from server.index.store import ProjectIndex
    from server.lsp.answers import answer_key, keep_computed
    from storage.folderstamp import stamp_folder

    index = ProjectIndex(root)
    last = [0.0]

    def step(done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or done % 50 == 0 or now - last[0] >= PROGRESS_EVERY:
            last[0] = now
            read, size = index.scan_bytes
            _write(out, b"p %d %d %d %d\n" % (done, total, read, size))

    try:
        index.scan(step)
        _write(out, b"i\n")
        before = stamp_folder(index.projects_dir)
        result = workspace_report_json([index], lambda p: from_fs_path(str(p)) or "")
        _write(out, b"r %d\n" % len(result) + result)
        key = answer_key("workspace/diagnostic", {}, index.projects_dir)  # every one of its params is ignored
        if before is not None and key is not None:
            keep_computed(key, before, index, result)
    finally:
        index.close()
