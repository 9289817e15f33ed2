"""Write a session held in a session store into a projects folder, as the Agent SDK does before
a store-backed resume, so every file reader (ours and `claude --resume`) takes it as it is.

The layout and bytes follow the SDK's resume materialisation: the main transcript at
`<projects>/<project_key>/<session_id>.jsonl`, one compact `json.dumps` per entry and line;
each subkey (`subagents/agent-<id>`) as `<session_id>/<subpath>.jsonl`, its synthetic
`agent_metadata` entries (the last one wins) as the `.meta.json` beside it, without `type`.
Files are 0600. A subpath that would leave the session's folder, or a name longer than a file
name can be, is refused (`InvalidArgument`) before anything is written.

Only the protocol's `load()` and `list_subkeys()` are used, so any `SessionStore` works.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from storage.access import open_decided_folder, resolve_target
from storage.errors import InUse, InvalidArgument, NotFound, OutsideProjects, Unsafe
from storage.paths import UUID_RE, real_root, stays_inside
from storage.storeorigin import mark_from_store
from storage.wholefile import put_whole, temp_name

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class StoreSessionNotFound(NotFound):
    """The store holds no entries under the key."""


class LocalFileExists(InUse):
    """A different file is already where the session would go; it is left untouched."""


@dataclass
class StoreSession:
    project_key: str
    session_id: str
    entries: list[Any]
    subkeys: dict[str, list[Any]] = field(default_factory=dict)
    mtime: int = 0
    """The store's write time of the main transcript, epoch ms (0 when not known)."""


async def load_session(store: Any, project_key: str, session_id: str) -> StoreSession:
    """The main transcript and every subkey of a store session."""
    entries = await store.load({"project_key": project_key, "session_id": session_id})
    if not entries:
        raise StoreSessionNotFound(f"no session {session_id} under project {project_key} in the store")
    subkeys: dict[str, list[Any]] = {}
    if callable(getattr(store, "list_subkeys", None)):
        try:
            names = await store.list_subkeys({"project_key": project_key, "session_id": session_id})
        except NotImplementedError:
            names = []
        for subpath in names:
            sub = await store.load({"project_key": project_key, "session_id": session_id, "subpath": subpath})
            if sub:
                subkeys[subpath] = sub
    return StoreSession(project_key, session_id, entries, subkeys)


class TooDeep:
    """A stored entry nested deeper than Python's JSON parser goes (about 1,000 levels; the CLI writes deeper): its
    session is not written anywhere (`session_files` refuses it), the other sessions of the store are."""

    def __init__(self, size: int) -> None:
        self.size = size

    def __str__(self) -> str:
        return f"an entry of {self.size:,} characters nested too deeply to read in the store"


def read_entry(text: str) -> Any:
    """A stored entry's JSON value, or `TooDeep` for one nested past the parser. Before, the `RecursionError` ended
    `list`/`check --store` in a traceback and the server's feed thread for good, every session of the store unseen."""
    try:
        return json.loads(text)
    except RecursionError:
        return TooDeep(len(text))


def jsonl_bytes(entries: list[Any]) -> bytes:
    """Entries as the SDK writes them: one compact JSON document per line, each ending in `\\n`."""
    return "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in entries).encode("utf-8")


def split_agent_metadata(entries: list[Any]) -> tuple[dict[str, Any] | None, list[Any]]:
    """(the last `agent_metadata` entry or None, the transcript lines)."""
    meta: dict[str, Any] | None = None
    lines = []
    for e in entries:
        if isinstance(e, dict) and e.get("type") == "agent_metadata":
            meta = dict(e)
        else:
            lines.append(e)
    return meta, lines


NAME_MAX = 255
"""The longest file name (in bytes) the file systems we write to take."""


def safe_subpath(subpath: str) -> bool:
    if not subpath or "\x00" in subpath or subpath.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", subpath):
        return False
    return not any(part in ("", ".", "..") for part in re.split(r"[\\/]", subpath))


def _fits(relative: Path) -> bool:
    """Every name on the path, and the file's temporary name, is short enough to be created (else the write fails
    half done)."""
    parts = (*relative.parts, temp_name(relative.name))
    return all(len(part.encode("utf-8", "surrogatepass")) <= NAME_MAX for part in parts)


def session_files(session: StoreSession) -> dict[Path, bytes]:
    """Relative path (under the projects folder) -> content, for every file of the session."""
    if not safe_subpath(session.project_key) or "/" in session.project_key or "/" in session.session_id:
        raise InvalidArgument(f"unsafe key {session.project_key!r}/{session.session_id!r}")
    if not safe_subpath(session.session_id):
        raise InvalidArgument(f"unsafe session id {session.session_id!r}")
    for entries in (session.entries, *session.subkeys.values()):
        deep = next((e for e in entries if isinstance(e, TooDeep)), None)
        if deep is not None:
            raise InvalidArgument(str(deep))
    project = Path(session.project_key)
    files = {project / f"{session.session_id}.jsonl": jsonl_bytes(session.entries)}
    for subpath, entries in session.subkeys.items():
        if not safe_subpath(subpath):
            raise InvalidArgument(f"unsafe subpath {subpath!r} in the store")
        meta, lines = split_agent_metadata(entries)
        base = project / session.session_id / subpath
        if lines:
            files[base.with_name(base.name + ".jsonl")] = jsonl_bytes(lines)
        if meta is not None:
            meta.pop("type", None)
            files[base.with_name(base.name + ".meta.json")] = json.dumps(meta).encode("utf-8")
    for relative in files:
        if not _fits(relative):
            raise InvalidArgument(f"a name longer than {NAME_MAX} bytes in {str(relative)[:80]!r}... in the store")
    return files


def write_session(projects_dir: Path, session: StoreSession, *, scratch: bool = False) -> Path:
    """Write the session's files under `projects_dir`; returns the main transcript's path.

    A file already there with the same content is kept; one with other content is not touched
    and `LocalFileExists` is raised before anything is written. Each file appears whole (written
    aside, then linked into place). Only a session whose id is a UUID is written into a projects
    folder (`claude --resume` knows no other), else `InvalidArgument`. `scratch=True` is for a
    temporary folder of our own (any id): files are created directly (still never over an existing
    one), which is much faster in bulk."""
    if not scratch and not UUID_RE.match(session.session_id):
        raise InvalidArgument(f"the store's session id {session.session_id!r} is not a session id; not written")
    files = {Path(projects_dir) / rel: data for rel, data in session_files(session).items()}
    if scratch:
        _write_scratch(projects_dir, files)
    else:  # its recorded cwd is the store's data (`storage.storeorigin`), marked before a byte is written
        mark_from_store(projects_dir, session.session_id)
        write_files(projects_dir, files)
    return Path(projects_dir) / session.project_key / f"{session.session_id}.jsonl"


def _write_scratch(projects_dir: Path, files: dict[Path, bytes]) -> None:
    """Create each file directly (never over one), each folder decided once and walked from `/` following no link
    (created 0700 where missing), the file created in it by descriptor."""
    folders: dict[Path, int] = {}
    try:
        for path, data in files.items():
            if path.parent not in folders:
                decided = resolve_target(projects_dir, path=path, access="create")
                folders[path.parent] = open_decided_folder(decided.parent, made=[])
            with os.fdopen(os.open(path.name, _CREATE, 0o600, dir_fd=folders[path.parent]), "wb") as fh:
                fh.write(data)
    finally:
        for fd in folders.values():
            os.close(fd)


def _held(projects_dir: Path, path: Path, data: bytes) -> bool | None:
    """Whether the regular file at `path` holds `data` (None when nothing is there, not even a
    dangling link; read only when the sizes agree); `LocalFileExists` for anything else there,
    `OutsideProjects` for a file reached through a folder link out of the projects folder, `Unsafe` for a
    hard link (its bytes may be a file's elsewhere) or a folder swapped for a link since: the file is opened in
    its real folder walked from `/` following no link (`storage.access`), never read through a link out."""
    if not os.path.lexists(path):
        return None
    if not stays_inside(projects_dir, path):
        raise OutsideProjects(f"{path} leads out of the projects folder {real_root(projects_dir)}; not written")
    try:
        folder = open_decided_folder(os.path.realpath(path.parent))
    except FileNotFoundError:
        return None
    try:
        fd = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LocalFileExists(f"{path} exists and is not a regular file ({exc.strerror}); not overwritten") from exc
    finally:
        os.close(folder)
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise LocalFileExists(f"{path} exists and is not a regular file; not overwritten")
        if st.st_nlink > 1:
            raise Unsafe(
                f"{path} is a hard link ({st.st_nlink} names for one file, possibly outside the projects folder); "
                "not read nor overwritten"
            )
        return st.st_size == len(data) and fh.read() == data


def write_files(projects_dir: Path, files: dict[Path, bytes]) -> None:
    """Write each file (absolute paths under `projects_dir`) whole, mode 0600, never over another.

    A file already there with the same content is kept; one with other content, or anything else
    there (a link, a FIFO, a device, a folder), is not touched and `LocalFileExists` is raised
    before anything is written; a path whose real path leaves the projects folder is `OutsideProjects`;
    a hard link there, or a folder on the way swapped for a link after the decision, `Unsafe`. Each file is
    written aside and linked in place in its folder opened by descriptor (`storage.wholefile`): a process killed
    midway leaves at most `.<name>.tmp` beside it, which the next write of that file removes."""
    held = {path: _held(projects_dir, path, data) for path, data in files.items()}
    for path in files:
        if held[path] is False:
            raise LocalFileExists(f"{path} exists with other content; not overwritten")
    for path, data in files.items():
        if held[path] is not None:
            continue
        path = resolve_target(projects_dir, path=path, access="create")  # no planted link leads out
        # and none swapped in since: the folder is walked from `/` (created 0700 where missing) following no link
        folder = open_decided_folder(path.parent, made=[])
        try:
            put_whole(folder, path.name, data, path, replace=False)  # never replaces a file that appeared
        except FileExistsError as exc:
            raise LocalFileExists(f"{path} appeared while writing; not overwritten") from exc
        finally:
            os.close(folder)
