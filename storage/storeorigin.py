"""Which local sessions were written from a session store: their recorded cwd is the store's data.

A store session brought into the projects folder (`pull`, the local copy of a store turn, a local fork
of a store session, or a fork of such a copy) records the working directory its rows carry, written by
whoever can insert into the shared database. A turn resumed without an explicit `cwd` would root its tools
there (`server.agent.session.sandbox_root`): a row recording `~/.ssh` let Read take a private key into the
transcript, and the next push sent it to the store (`tests/test_trust_store_cwd.py`). So each such session
id is marked below the config home, `<config>/session-lsp/from-store/<id>` (an empty 0600 file, the folders
0700, reached taking no symlink), before its first byte is written; a turn of a marked session needs the
person's own `cwd`. A session pulled before marks existed is not marked.

`<config>` is the parent of the projects folder's REAL path (`storage.paths.real_root`, every symlink resolved),
whatever name the caller reached the projects folder by: `~/.claude/projects` a link to `/data/projects`, a
`pull --projects-dir /data/projects` and a server on `~/.claude/projects` mark and look in one place. Marks were
once made below the parent of the name as written; those still count (`from_store` looks there too, and below
the default config home when its projects folder is the same folder): never less strict.
"""

from __future__ import annotations

import os
from pathlib import Path

from storage.errors import InvalidArgument
from storage.locking import FILE_MODE, open_private_below
from storage.paths import UUID_RE, default_projects_dir, real_root

NAMES = ["session-lsp", "from-store"]


def _checked(session_id: str) -> str:
    if not UUID_RE.match(session_id):
        raise InvalidArgument(f"{session_id!r} is not a session id")
    return session_id


def _marking_homes(projects_dir: Path | str) -> list[Path]:
    """Where a mark may be made, first first: below the real path's parent, else below the default config home when
    its projects folder is the same real folder. Both are homes `from_store` looks in whatever name the folder is
    reached by (the parent of a name as written is not: a mark there is missed through another link)."""
    real = real_root(projects_dir)
    return list(dict.fromkeys([real.parent, *_default_home_sharing(real)]))


def _homes(projects_dir: Path | str) -> list[Path]:
    """Every config home whose marks count for `projects_dir`: the real one, the parent of the name as written
    (marks made before they were keyed by the real path), and the default config home when its projects folder
    is the same real folder (such marks a server made, then checked through another name)."""
    real = real_root(projects_dir)
    written = Path(os.path.expanduser(os.fspath(projects_dir))).parent
    return list(dict.fromkeys([real.parent, written, *_default_home_sharing(real)]))


def _default_home_sharing(real: Path) -> list[Path]:
    """The default config home, when its projects folder is the real folder `real`."""
    default = default_projects_dir()
    try:
        if real_root(default) == real:
            return [Path(os.path.expanduser(os.fspath(default))).parent]
    except (OSError, ValueError):
        pass
    return []


def mark_from_store(projects_dir: Path | str, session_id: str) -> None:
    """Record that `session_id`'s local files in `projects_dir` come from a store (idempotent): below the parent of
    its real path, or, where no mark can be made there (the real folder's parent is not ours: `/data` root's,
    `/data/projects` ours), below the default config home sharing the folder (`_marking_homes`); the last failure
    raised when none takes it (the pull fails before writing). Only an `OSError` moves on: something in a home's way
    (`Unsafe`) is raised."""
    name = _checked(session_id)
    homes = _marking_homes(projects_dir)
    for i, home in enumerate(homes):
        try:
            _mark_below(home, name)
            return
        except OSError:
            if i == len(homes) - 1:
                raise


def _mark_below(config_dir: Path, name: str) -> None:
    folder = open_private_below(config_dir, NAMES, Path(config_dir, *NAMES, name))
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        os.close(os.open(name, flags, FILE_MODE, dir_fd=folder))
    except OSError:
        if not os.path.lexists(Path(config_dir, *NAMES, name)):
            raise  # a link or FIFO someone put there still counts as a mark: never less strict
    finally:
        os.close(folder)


def from_store(projects_dir: Path | str, session_id: str) -> bool:
    """Whether `session_id`'s local files in `projects_dir` were written from a store (anything at its mark's name
    counts, below any of the homes of `_homes`)."""
    if not UUID_RE.match(session_id):
        return False
    return any(os.path.lexists(Path(home, *NAMES, session_id)) for home in _homes(projects_dir))
