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


class OneFile:
    """The loader of one file's link rows (a `load` for `storage.resume.resume`) that stores what it read when asked
    (`store`), so a command can give its answer first: storing a 150 MB transcript's rows takes 0.09 s, which its
    reader need not wait for. Leave it by `close` (a `with` block), which closes the database, stored or not."""

    def __init__(self) -> None:
        self._db: IndexDB | None = None
        self._unstored: FileState | None = None

    def __call__(self, path: Path) -> Transcript:
        """`path` loaded as `Transcript.load` loads it, through the index database where it can be."""
        self.close()
        db = self._db = IndexDB.open()
        if db is None:
            return Transcript.load(path)
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
            self._unstored = state
        return state.transcript

    def store(self) -> None:
        """Store the rows read (when the file changed since they were stored), then close the database."""
        db, state = self._db, self._unstored
        self._unstored = None
        if db is not None and state is not None:
            try:
                if save_files(db, [state]):
                    db.commit()
            except DAMAGE:
                pass  # only a saving lost: the next run reads the file again
        self.close()

    def close(self) -> None:
        db, self._db, self._unstored = self._db, None, None
        if db is not None:
            db.close()

    def __enter__(self) -> OneFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def file_transcript(path: Path) -> Transcript:
    """`path` loaded as `Transcript.load` loads it, through the index database where it can be; what was read is
    stored at once."""
    with OneFile() as one:
        transcript = one(path)
        one.store()
        return transcript
