"""Which local sessions were written from a session store: their recorded cwd is the store's data.

A store session brought into the projects folder (`pull`, the local copy of a store turn, a local fork
of a store session, or a fork of such a copy) records the working directory its rows carry, written by
whoever can insert into the shared database. A turn resumed without an explicit `cwd` would root its tools
there (`server.agent.session.sandbox_root`): a row recording `~/.ssh` let Read take a private key into the
transcript, and the next push sent it to the store (`tests/test_trust_store_cwd.py`). So each such session
id is marked below the config home, `<config>/session-lsp/from-store/<id>` (an empty 0600 file, the folders
0700, reached taking no symlink), before its first byte is written; a turn of a marked session needs the
person's own `cwd`. A session pulled before marks existed is not marked.
"""

from __future__ import annotations

import os
from pathlib import Path

from storage.errors import InvalidArgument
from storage.locking import FILE_MODE, open_private_below
from storage.paths import UUID_RE

NAMES = ["session-lsp", "from-store"]


def _checked(session_id: str) -> str:
    if not UUID_RE.match(session_id):
        raise InvalidArgument(f"{session_id!r} is not a session id")
    return session_id


def mark_from_store(config_dir: Path, session_id: str) -> None:
    """Record that `session_id`'s local files come from a store (idempotent)."""
    name = _checked(session_id)
    folder = open_private_below(config_dir, NAMES, Path(config_dir, *NAMES, name))
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        os.close(os.open(name, flags, FILE_MODE, dir_fd=folder))
    except OSError:
        if not os.path.lexists(Path(config_dir, *NAMES, name)):
            raise  # a link or FIFO someone put there still counts as a mark: never less strict
    finally:
        os.close(folder)


def from_store(config_dir: Path, session_id: str) -> bool:
    """Whether `session_id`'s local files were written from a store (anything at its mark's name counts)."""
    if not UUID_RE.match(session_id):
        return False
    return os.path.lexists(Path(config_dir, *NAMES, session_id))
