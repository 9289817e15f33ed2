"""A test hook, loaded only by the tests that put this folder on a child process's PYTHONPATH: the process SIGKILLs
itself at one deterministic point of a write below `$KILL_UNDER`, so a test sees what a write stopped midway leaves.

- `KILL_AT=create`: just after the first file is created there (`os.open` with `O_CREAT`), before a byte is written;
- `KILL_AT=place`: just before the first `os.link`, `os.rename` or `os.replace` whose target is there (the data is
  written, not yet in place).

Paths opened by descriptor (`dir_fd`) are named through `/proc/self/fd`, so a write by path and one by descriptor
are stopped alike. Nothing in product code knows of this hook."""

from __future__ import annotations

import os
import signal
from typing import Any

_UNDER = os.environ.get("KILL_UNDER", "")
_AT = os.environ.get("KILL_AT", "")


def _full(path: Any, dir_fd: int | None) -> str:
    text = os.fsdecode(os.fspath(path))
    if dir_fd is None or os.path.isabs(text):
        return os.path.abspath(text)
    return os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), text)


def _below(path: Any, dir_fd: int | None) -> bool:
    full = _full(path, dir_fd)
    return full.startswith(_UNDER.rstrip("/") + "/")


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


if _UNDER and _AT == "create":
    _open = os.open

    def _open_then_die(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        fd = _open(path, flags, mode, dir_fd=dir_fd)
        if flags & os.O_CREAT and _below(path, dir_fd):
            _die()
        return fd

    os.open = _open_then_die  # type: ignore[assignment]

if _UNDER and _AT == "place":
    _link, _rename, _replace = os.link, os.rename, os.replace

    def _die_before(real: Any) -> Any:
        def placing(src: Any, dst: Any, **kw: Any) -> Any:
            if _below(dst, kw.get("dst_dir_fd")):
                _die()
            return real(src, dst, **kw)

        return placing

    os.link = _die_before(_link)  # type: ignore[assignment]
    os.rename = _die_before(_rename)  # type: ignore[assignment]
    os.replace = _die_before(_replace)  # type: ignore[assignment]
