"""What every tool shares: its schema, the context it runs in, results, and the one sandbox rule.

The rule: a tool reads, lists or writes only what really lies inside the sandbox root (the
session's working directory with every symlink resolved). A symlink whose target is outside is
neither read nor listed; a path swapped for a symlink between the check and the open is caught by
opening without following symlinks, under a folder whose open descriptor is checked in turn.
Only regular files are read: a FIFO, socket or device is refused, so no read can block forever.
A file with more than one name (a hard link, which resolving symlinks cannot see) is never written:
its other name may be outside the root.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

from server.agent.cancel import CancelToken
from server.credentials import SECRET_NAMES as SECRET_NAMES  # the names' home: light enough for `serve`'s start
from server.credentials import SERVER_SECRETS as SERVER_SECRETS
from server.credentials import without_credentials
from storage.jsonline import scrub_surrogates
from storage.paths import is_inside

DEFAULT_TIMEOUT_S = 60.0
"""How long a tool without a timeout parameter of its own may run."""


class ToolError(Exception):
    """A tool failed in a way the model should hear about (sent back as an error result)."""


class ToolTimedOut(ToolError):
    """The call ran past its deadline; the runner reports which tool and after how long."""


class ToolCancelled(ToolError):
    """The turn was cancelled while the call ran; its result is dropped."""


@dataclass
class ToolOutput:
    content: str
    is_error: bool = False
    extra: dict[str, Any] | None = None
    """What the CLI keeps as `toolUseResult` beside the result row (optional)."""

    def __post_init__(self) -> None:
        """What a tool gives back is valid Unicode: a file name that is not valid UTF-8 comes from `os` with lone
        surrogates in it, which no API request or transcript line can carry (the turn died sending the next
        request); as the CLI (Node) lists such a name, each of them is U+FFFD (`shown`)."""
        self.content = shown(self.content)
        if self.extra is not None:
            self.extra = scrub_surrogates(self.extra)


def shown(text: str) -> str:
    """`text` with each lone surrogate (an undecodable byte of a file name, as `os` decodes it) as U+FFFD: what a
    tool shows or matches a pattern against (RE2 takes only valid Unicode)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return str(scrub_surrogates(text))
    return text


def tool_environment() -> dict[str, str]:
    """The environment of the processes tools start: the server's, less `SECRET_NAMES`."""
    return without_credentials()


@dataclass
class ToolContext:
    cwd: Path
    """The session's working directory, the sandbox root: every path a tool touches must be inside it."""
    env: dict[str, str] = field(default_factory=tool_environment)
    cancel: CancelToken | None = None
    """Cancelled when the turn is (or, per call, when the call times out); tools that start
    processes kill them then, the others stop at their next `checkpoint()`."""
    timeout: float | None = None
    """Seconds a call of a tool without its own timeout parameter may run (default DEFAULT_TIMEOUT_S)."""
    deadline: float | None = None
    """`time.monotonic()` past which `checkpoint()` raises ToolTimedOut; the runner sets it per call."""

    @cached_property
    def root(self) -> Path:
        """The sandbox root: cwd with every symlink resolved."""
        return Path(os.path.realpath(self.cwd))

    def checkpoint(self) -> None:
        """Raise if the turn was cancelled or the call is out of time; long loops call this often."""
        if self.cancel is not None and self.cancel.cancelled:
            raise ToolCancelled("cancelled")
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise ToolTimedOut("timed out")

    # -- the rule for paths the model names --------------------------------------------------------
    def confine(self, raw: Any, *, must_exist: bool = False) -> Path:
        """`raw` (absolute, or relative to cwd) resolved, and checked to stay inside the root."""
        if not isinstance(raw, str) or not raw.strip():
            raise ToolError("a path is required")
        root = self.root
        candidate = Path(os.path.expanduser(raw))
        if not candidate.is_absolute():
            candidate = root / candidate
        real = Path(os.path.realpath(candidate))
        if not is_inside(root, real):  # the sandbox rule
            raise ToolError(f"{raw} is outside the working directory {root}; access denied")
        if must_exist and not real.exists():
            raise ToolError(f"File does not exist: {raw}")
        return real

    # -- the rule for entries met while walking or listing ----------------------------------------
    def admits(self, path: Path) -> Path | None:
        """The real path of `path` if it lies inside the root (a symlink is followed to its target),
        else None: such an entry is neither read nor listed."""
        real = Path(os.path.realpath(path))
        return real if is_inside(self.root, real) else None

    # -- opening under the rule ----------------------------------------------------------------------
    def open_dir(self, path: Path) -> int:
        """A descriptor of the folder `path`, opened without following a final symlink and refused
        unless the folder it names really is inside the root."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(path):
                raise ToolError(f"{path} is a symbolic link, not a folder; access denied") from None
            raise
        try:
            real = _fd_path(fd, path)
            if real is None or not is_inside(self.root, real):
                raise ToolError(f"{path} is outside the working directory {self.root}; access denied")
        except BaseException:
            os.close(fd)
            raise
        return fd

    def make_folders(self, folder: Path) -> None:
        """Make `folder` (a real path inside the root) and every folder missing on the way, one at a time, each in
        its parent's open descriptor from the root down, following no link: a folder on the way swapped for a
        link after the check stops it (a folder is never made where the link leads)."""
        try:
            names = folder.relative_to(self.root).parts
        except ValueError:
            raise ToolError(f"{folder} is outside the working directory {self.root}; access denied") from None
        fd = self.open_dir(self.root)
        try:
            for name in names:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=fd)
                try:
                    below = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise ToolError(
                            f"{folder}: {name} on the way is a symbolic link or not a folder; access denied"
                        ) from None
                    raise
                fd, above = below, fd  # held before closed: a close that raised is never closed again
                os.close(above)
        finally:
            os.close(fd)

    def open_file(self, path: Path, flags: int = os.O_RDONLY, mode: int = 0o666) -> int:
        """A descriptor of the regular file `path`: its folder is opened under the rule, the name is
        opened in that folder without following symlinks and without blocking, and anything but a
        regular file (FIFO, socket, device) is refused with the reason, as is writing a hard link."""
        path = Path(path)
        refuse_special(path)
        parent = self.open_dir(path.parent)
        try:
            fd = os.open(
                path.name, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, mode, dir_fd=parent
            )
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ToolError(f"{path} is a symbolic link swapped in after the check; access denied") from None
            if exc.errno in (errno.ENXIO, errno.EOPNOTSUPP):
                refuse_special(path)
            raise
        finally:
            os.close(parent)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                kind = special_kind(st.st_mode) or ("a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file")
                raise ToolError(f"{path} is {kind}; only regular files can be read or written")
            if flags & (os.O_WRONLY | os.O_RDWR) and st.st_nlink > 1:
                raise ToolError(
                    f"{path} is a hard link ({st.st_nlink} names for one file, maybe outside the working "
                    "directory): writing it would change them all; access denied"
                )
        except BaseException:
            os.close(fd)
            raise
        return fd

    def read_bytes(self, path: Path, limit: int | None = None) -> bytes:
        """The content of the regular file `path` inside the root (at most `limit` bytes)."""
        fd = self.open_file(path)
        try:
            os.set_blocking(fd, True)
            chunks: list[bytes] = []
            size = 0
            while limit is None or size < limit:
                self.checkpoint()
                chunk = os.read(fd, 1 << 20 if limit is None else min(1 << 20, limit - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def write_text(self, path: Path, text: str) -> None:
        """Replace the content of the regular file `path` inside the root (created if missing)."""
        data = text.encode("utf-8")
        fd = self.open_file(path, os.O_WRONLY | os.O_CREAT)
        try:
            os.set_blocking(fd, True)
            self.checkpoint()
            os.ftruncate(fd, 0)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)


def special_kind(mode: int) -> str | None:
    """What a file that is not regular nor a folder is, in words; None for regular files and folders."""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return None


def refuse_special(path: Path) -> None:
    """Raise a clear ToolError if `path` is a FIFO, socket or device (which a read could hang on)."""
    try:
        kind = special_kind(os.stat(path).st_mode)
    except OSError:
        return
    if kind:
        raise ToolError(f"{path} is {kind}; only regular files can be read or written")


def _fd_path(fd: int, path: Path) -> Path | None:
    """The real path of an open folder: from /proc where there is one, else `path` resolved, provided
    it still names the very folder that is open."""
    try:
        text = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        real = os.path.realpath(path)
        try:
            same = os.path.samestat(os.stat(real), os.fstat(fd))
        except OSError:
            return None
        return Path(real) if same else None
    return None if text.endswith(" (deleted)") or not text.startswith("/") else Path(text)


class Tool(Protocol):
    name: str
    read_only: bool
    """Read-only tools are on by default and may run in parallel with each other."""

    def schema(self) -> dict[str, Any]: ...

    def run(self, tool_input: dict[str, Any], ctx: ToolContext) -> ToolOutput: ...


def time_limit(tool: Tool, tool_input: dict[str, Any], ctx: ToolContext) -> float:
    """Seconds a call may run: the tool's own `time_limit(input)` if it has one (Bash), else the context's."""
    own = getattr(tool, "time_limit", None)
    if callable(own):
        try:
            return float(own(tool_input))
        except ToolError:
            pass
    return DEFAULT_TIMEOUT_S if ctx.timeout is None else max(0.0, float(ctx.timeout))


def schema(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "input_schema": {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        },
    }


def string_arg(tool_input: dict[str, Any], key: str, *, required: bool = True) -> str | None:
    value = tool_input.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise ToolError(f"InputValidationError: `{key}` must be a string")
    return value


def int_arg(tool_input: dict[str, Any], key: str) -> int | None:
    value = tool_input.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"InputValidationError: `{key}` must be an integer")
    return value
