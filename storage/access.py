"""Where session-lsp may read and write: the one decision for every transcript path.

`resolve_target` is called for every session file we read by request, append to or create, by id
or by path, from the command line, the language server and the agent alike. Its rule:

- the real path (every symlink resolved, the projects folder's own included) is inside the real
  projects folder;
- to read or append, it is a regular file (not a FIFO, device, folder or dangling link) whose first
  rows carry `type` and `sessionId` as the CLI writes them (1.0.x summary files: `type: summary`);
  to append, it is also a session file (`<project folder>/<uuid>.jsonl`), never a subagent file,
  and it has one name only: a hard link may share its bytes with a file outside, which symlink
  resolution cannot see, so a write would change that file too;
- to create, nothing exists at the path yet (not even a dangling link) and every existing folder
  on the way is really inside the projects folder.

Anything else raises `OutsideProjects`, `NotATranscript`, `NotFound` or `Unsafe` and nothing is touched. The
decided path is the real path, so no part of it is a symlink; `open_decided` opens it so that this
still holds at the open, however long after the decision (a turn appends for minutes): each folder
on the way is opened without following a symlink, the file too, and what was opened must be a
regular file with a single name when it is opened for writing. The decided path is returned as a
`DecidedPath`, and `storage.fileopen.open_regular` (where every transcript is opened for reading) opens
one of those by `open_decided`: a file swapped for a link after the decision is not followed.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from pathlib import Path, PosixPath
from typing import Literal

import orjson

from storage.errors import InvalidArgument, NotATranscript, NotFound, OutsideProjects, Unsafe
from storage.paths import UUID_RE, decodable, is_inside, project_folder_name, real_root, resolve_cwd

Access = Literal["read", "write", "create"]
HEAD_BYTES = 64 * 1024
HEAD_ROWS = 16


class DecidedPath(PosixPath):
    """A real path `resolve_target` decided: opened for reading (`storage.fileopen.open_regular`) only
    by `open_decided`, so no symlink is followed however long after the decision. A path made from it
    (its folder, a file beside it) is a plain `Path`: it was never decided."""

    if sys.version_info >= (3, 12):

        def with_segments(self, *segments: str | os.PathLike[str]) -> Path:
            return Path(*segments)

    else:

        @classmethod
        def _from_parsed_parts(cls, drv: str, root: str, parts: list[str]) -> Path:
            made: Path = PosixPath._from_parsed_parts(drv, root, parts)  # type: ignore[attr-defined]
            return made


def as_path(path: Path | str) -> Path:
    """`path` as a `Path`, a `DecidedPath` still one (`Path(decided)` is a plain path, read by a plain open)."""
    return path if isinstance(path, Path) else Path(path)


def _check_text(value: str, name: str) -> str:
    if "\x00" in value:
        raise InvalidArgument(f"{name} contains a NUL character")
    return value


def looks_like_transcript(path: Path) -> bool:
    """The first rows of the real path `path` are JSON objects as the CLI writes them: the first has a string
    `type`, and one of the first few carries a string `sessionId` (or is a `summary` row of a 1.0.x file).
    Read by `open_decided`: a folder or the file swapped for a link since it was resolved raises `Unsafe`."""
    try:
        fd = open_decided(path, os.O_RDONLY)
    except NotATranscript:
        return False
    try:
        head = os.read(fd, HEAD_BYTES)
    finally:
        os.close(fd)
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    lines = head.split(b"\n")
    if len(head) == HEAD_BYTES and len(lines) > 1:
        lines.pop()  # the last piece may be cut short
    rows = []
    for raw in lines:
        if not raw.strip():
            continue
        try:
            row = orjson.loads(raw)
        except orjson.JSONDecodeError:
            try:
                row = orjson.loads(raw.decode("utf-8", "replace").encode("utf-8", "surrogatepass"))
            except (orjson.JSONDecodeError, UnicodeError):
                continue
        rows.append(row)
        if len(rows) >= HEAD_ROWS:
            break
    if not rows or not isinstance(rows[0], dict) or not isinstance(rows[0].get("type"), str):
        return False
    return any(
        isinstance(r, dict)
        and isinstance(r.get("type"), str)
        and (isinstance(r.get("sessionId"), str) or r.get("type") == "summary")
        for r in rows
    )


def _hard_link(path: os.PathLike[str] | str, names: int) -> str:
    return (
        f"{path} is a hard link ({names} names for one file): writing would change the file under every "
        "name, possibly outside the projects folder; refused"
    )


def in_project_folder(root: Path, real: Path) -> bool:
    """Whether the real path `real` is a file of a project folder (`<projects>/<folder>/<name>`), where the CLI keeps
    its sessions: not one in the projects folder itself, nor deeper (a subagent's file, `<session>/subagents/`)."""
    return real.parent.parent == root


def _existing(root: Path, given: Path, access: Access) -> Path:
    real = Path(os.path.realpath(given))
    if not is_inside(root, real):
        raise OutsideProjects(f"{given} is outside the projects folder {root} (it resolves to {real})")
    if not decodable(real.relative_to(root)):
        name = os.fsencode(given)
        raise NotATranscript(f"{name!r} is not a transcript: its name is not valid UTF-8 (the CLI never reads it)")
    try:
        st = os.stat(real)
    except FileNotFoundError as exc:
        raise NotFound(f"no such transcript: {given}") from exc
    except OSError as exc:
        raise NotFound(f"cannot read {given}: {exc.strerror}") from exc
    if not stat.S_ISREG(st.st_mode):
        raise NotATranscript(f"{given} is not a regular file")
    if real.suffix != ".jsonl":
        raise NotATranscript(f"{given} is not a .jsonl transcript")
    if access == "write" and not (in_project_folder(root, real) and UUID_RE.match(real.stem)):
        raise NotATranscript(f"{given} is not a session file (<project folder>/<session id>.jsonl)")
    if access == "write" and st.st_nlink > 1:
        raise Unsafe(_hard_link(given, st.st_nlink))
    try:
        ok = looks_like_transcript(real)
    except OSError as exc:
        raise NotATranscript(f"cannot read {given}: {exc.strerror}") from exc
    if not ok and st.st_size == 0:
        raise NotATranscript(f"{given}: no conversation found (an empty file)")
    if not ok:
        raise NotATranscript(f"{given} is not a Claude Code transcript (its first rows carry no type/sessionId)")
    return DecidedPath(real)


def _new(root: Path, given: Path) -> Path:
    """A path to create: absent, and every folder on the way that exists really inside `root`."""
    absolute = Path(os.path.abspath(given))
    if os.path.lexists(absolute):
        raise InvalidArgument(f"{given} already exists")
    folder = absolute.parent
    missing: list[str] = []
    while not os.path.lexists(folder):
        missing.append(folder.name)
        if folder.parent == folder:
            break
        folder = folder.parent
    real_folder = Path(os.path.realpath(folder))
    if not real_folder.is_dir():
        raise OutsideProjects(f"{folder} is not a folder")
    real = real_folder.joinpath(*reversed(missing), absolute.name)
    if not is_inside(root, real.parent):
        raise OutsideProjects(f"{given} is outside the projects folder {root} (it resolves to {real})")
    return DecidedPath(real)


def resolve_target(
    projects_dir: Path | str,
    *,
    path: Path | str | None = None,
    session_id: str | None = None,
    access: Access = "read",
) -> Path:
    """The real path of the session file named by `path` or `session_id`, if `access` to it is
    allowed (see the module docstring); else `OutsideProjects`, `NotATranscript`, `NotFound` or `Unsafe`."""
    root = real_root(projects_dir)
    if path is not None:
        text = _check_text(os.fspath(path), "path")
        given = Path(os.path.expanduser(text))
        if not given.is_absolute():
            given = Path.cwd() / given
        return _new(root, given) if access == "create" else _existing(root, given, access)
    if session_id is None:
        raise InvalidArgument("a session id or a path is required")
    _check_text(session_id, "sessionId")
    if not UUID_RE.match(session_id):
        raise InvalidArgument(f"not a session id: {session_id!r}")
    if access == "create":
        raise InvalidArgument("a new session is created from its working directory (new_session_path)")
    if not root.is_dir():
        raise NotFound(f"projects folder does not exist: {root}")
    refused: Exception | None = None
    for folder in sorted(root.iterdir()):
        if not decodable(folder.name):  # no project folder (`storage.paths.decodable`)
            continue
        candidate = folder / f"{session_id}.jsonl"
        if not os.path.lexists(candidate):
            continue
        try:
            return _existing(root, candidate, access)
        except (OutsideProjects, NotATranscript, NotFound, Unsafe) as exc:
            refused = refused or exc
    if refused is not None:
        raise refused
    raise NotFound(f"no session {session_id} under {root}")


def new_session_path(projects_dir: Path | str, cwd: str, session_id: str) -> Path:
    """Where a new session of `cwd` is created: `<projects>/<folder cwd maps to>/<id>.jsonl`,
    decided by the same rule (a symlinked project folder pointing elsewhere is refused)."""
    if not UUID_RE.match(session_id):
        raise InvalidArgument(f"not a session id: {session_id!r}")
    folder = project_folder_name(resolve_cwd(_check_text(cwd, "cwd")))
    return resolve_target(projects_dir, path=real_root(projects_dir) / folder / f"{session_id}.jsonl", access="create")


_WALK = getattr(os, "O_PATH", os.O_RDONLY)
"""Folders on the way are opened only to walk through (Linux `O_PATH`): no read permission needed, as for a path."""
_FOLDER = _WALK | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_WRITING = os.O_WRONLY | os.O_RDWR


def _swapped(path: os.PathLike[str] | str) -> Unsafe:
    return Unsafe(f"{path}: a symbolic link took the place of a folder or of the file after it was decided; refused")


def open_decided(path: os.PathLike[str] | str, flags: int, mode: int = 0o600, *, made: list[str] | None = None) -> int:
    """A descriptor of the path `resolve_target` decided, opened with `flags`, taking no symlink on
    the way: its folder is opened by `open_decided_folder`, and the file in it with `O_NOFOLLOW |
    O_NONBLOCK`. A folder or the file swapped for a symlink since the decision raises `Unsafe`;
    anything but a regular file `NotATranscript`; a file opened for writing that has another name
    (a hard link) `Unsafe`. `made` as for `open_decided_folder`."""
    parent, name = os.path.split(os.fspath(path))
    return open_in_folder(open_decided_folder(parent, made=made), name, flags, mode, path)


def open_in_folder(folder: int, name: str, flags: int, mode: int, path: os.PathLike[str] | str) -> int:
    """`name` in the folder open as `folder` (closed here), opened as `open_decided` opens its file; `path` names
    it in errors."""
    try:
        fd = os.open(name, flags | _FILE, mode, dir_fd=folder)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _swapped(path) from None
        if exc.errno == errno.ENXIO:  # a FIFO no one reads, a socket or a device, opened for writing
            raise NotATranscript(f"{path} is not a regular file") from None
        raise
    finally:
        os.close(folder)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotATranscript(f"{path} is not a regular file")
        if flags & _WRITING and st.st_nlink > 1:
            raise Unsafe(_hard_link(path, st.st_nlink))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_decided_folder(path: os.PathLike[str] | str, *, made: list[str] | None = None) -> int:
    """A descriptor of a folder on a decided path, every folder from `/` down opened with
    `O_NOFOLLOW` under the previous one (`Unsafe` where a symlink took a folder's place). With
    `made`, missing folders are created 0700 on the way (in the folder already opened) and their
    paths appended to it, outermost first."""
    text = os.fspath(path)
    if not os.path.isabs(text):
        raise InvalidArgument(f"not an absolute path: {path}")
    names = [name for name in text.split("/") if name and name != "."]
    if ".." in names:
        raise InvalidArgument(f"not a decided path (it holds ..): {path}")
    return walk_folders(os.open("/", _WALK | os.O_DIRECTORY | os.O_CLOEXEC), names, path, made=made)


def walk_folders(
    folder: int, names: list[str], path: os.PathLike[str] | str, *, made: list[str] | None = None, at: str = "/"
) -> int:
    """The folder `names` leads to from the folder open as `folder` (closed here, whatever happens), each opened
    with `O_NOFOLLOW` under the previous one, as `open_decided_folder` walks from `/` (`at`: the path of `folder`,
    for `made`)."""
    try:
        for depth, name in enumerate(names, start=1):
            try:
                inner = _open_folder(name, folder, path)
            except FileNotFoundError:
                if made is None:
                    raise
                try:
                    os.mkdir(name, 0o700, dir_fd=folder)
                    made.append(os.path.join(at, *names[:depth]))
                except FileExistsError:
                    pass
                inner = _open_folder(name, folder, path)
            # the next folder is the one held before the last is closed: a close that raised (and released the
            # number all the same) is not closed again by the cleanup, and `inner` is not left open
            folder, above = inner, folder
            os.close(above)
    except BaseException:
        os.close(folder)
        raise
    return folder


def _open_folder(name: str, folder: int, path: os.PathLike[str] | str) -> int:
    try:
        return os.open(name, _FOLDER, dir_fd=folder)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _swapped(path) from None
        raise
