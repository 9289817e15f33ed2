"""One file's link rows for a command that reads a single session (`chain`): restored from the index database
when it holds the file unchanged or appended to (then only the appended bytes are read), else read from the
file; stored back when the file is settled, as the language server's index stores it (`server.index.saved`).

A 150 MB transcript parses in about half a second; its stored rows decode in about a third of that. Without a
database (caching off, a database another process holds, a damaged one), the file is read as `Transcript.load`
reads it.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from server.index.filestate import MISSING, UNCHANGED, FileState
from server.index.saved import restore_file, save_files
from storage.indexdb import DAMAGE, IndexDB
from storage.transcript import Transcript


def file_transcript(path: Path) -> Transcript:
    """`path` loaded as `Transcript.load` loads it, through the index database where it can be."""
    db = IndexDB.open()
    if db is None:
        return Transcript.load(path)
    with db:
        try:
            state: FileState | None = restore_file(db, path, partial(db.rowset_rows, str(path)))
        except DAMAGE:
            state = None
        if state is None:
            state = FileState(path)
        how = state.refresh(split=True)
        if how == MISSING:
            return Transcript.load(path)  # raises as a plain load does
        if how != UNCHANGED:
            try:
                if save_files(db, [state]):
                    db.commit()
            except DAMAGE:
                pass  # only a saving lost: the next run reads the file again
        return state.transcript
