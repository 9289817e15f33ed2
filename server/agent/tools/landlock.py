"""Writes confined to some folders, for a process and everything it starts (Linux Landlock).

A Bash command the person allowed still runs with their rights; what keeps it inside the turn's sandbox is the
kernel: before the command starts, its process is restricted (`landlock_restrict_self`, inherited by every process
it starts, never lifted) so that it may create, write, truncate, rename into, link into or remove files only below
the folders given (truncating only from Landlock ABI 3, Linux 6.2: an older kernel cannot refuse `truncate(2)`;
nor does any version cover a file's times, mode, owner or extended attributes). Reading and running programs are
not restricted. `PR_SET_NO_NEW_PRIVS` comes with it (Landlock needs it): a set-user-id program (`sudo`) gains
nothing.

Standard library only: the Bash supervisor (`supervise.py`, run isolated) loads this file by its path.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys
from typing import Any

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
"""The same numbers on every Linux architecture (5.13)."""
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

_WRITE_FILE = 1 << 1
_FILE_WRITES = _WRITE_FILE
"""Of the rights below, those a rule on a file (not a folder) may give."""
_FOLDER_WRITES = (
    (1 << 4)  # REMOVE_DIR
    | (1 << 5)  # REMOVE_FILE
    | (1 << 6)  # MAKE_CHAR
    | (1 << 7)  # MAKE_DIR
    | (1 << 8)  # MAKE_REG
    | (1 << 9)  # MAKE_SOCK
    | (1 << 10)  # MAKE_FIFO
    | (1 << 11)  # MAKE_BLOCK
    | (1 << 12)  # MAKE_SYM
)
_REFER = 1 << 13
"""ABI 2: linking or renaming a file into another folder."""
_TRUNCATE = 1 << 14
"""ABI 3: truncating a file."""
_SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
"""ABI 6: no connecting to an abstract Unix socket made outside the command's domain (an X server's, through which a
command could type into your terminal). Signals are left unscoped: a later call must still stop a job an earlier one
left running."""

DEVICES = ("/dev/null", "/dev/stdout", "/dev/stderr")
"""Files outside the folders that a command may still write: the sink every shell redirects to, and its own output
by name (the pipes it was given as standard output and error, which `/dev/stdout` leads to)."""


class Unconfined(OSError):
    """The kernel cannot confine a process's writes here (not Linux, a kernel before 5.13, Landlock turned off)."""


def _syscall() -> Any:
    """libc's `syscall`, returning a long, setting errno."""
    call = ctypes.CDLL(None, use_errno=True).syscall
    call.restype = ctypes.c_long
    return call


def abi() -> int:
    """The Landlock version the kernel offers; 0 when it offers none."""
    if sys.platform != "linux":
        return 0
    try:
        version = _syscall()(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(0, int(version))


def _rights(version: int) -> tuple[int, int]:
    """(every write right this kernel knows, those a rule on a file may give)."""
    handled, on_files = _FOLDER_WRITES | _FILE_WRITES, _FILE_WRITES
    if version >= 2:
        handled |= _REFER
    if version >= 3:
        handled |= _TRUNCATE
        on_files |= _TRUNCATE
    return handled, on_files


def confine_writes(folders: list[str]) -> None:
    """Restrict this process, and all it starts from now on, to writing below `folders` (and to `DEVICES`). Call it
    in the process about to run the command (a single thread). `Unconfined` where the kernel cannot; an `OSError`
    for a folder that cannot be opened."""
    version = abi()
    if version < 1:
        raise Unconfined("the kernel offers no Landlock (Linux 5.13 or later, with Landlock on)")
    handled, on_files = _rights(version)
    call = _syscall()
    if version >= 6:  # the third form of the ruleset: file rights, network rights (none handled), scopes
        packed = struct.pack("=QQQ", handled, 0, _SCOPE_ABSTRACT_UNIX_SOCKET)
    else:
        packed = struct.pack("=Q", handled)
    attr = ctypes.create_string_buffer(packed, len(packed))
    ruleset = call(_SYS_CREATE_RULESET, attr, ctypes.c_size_t(len(packed)), ctypes.c_uint32(0))
    if ruleset < 0:
        raise Unconfined(ctypes.get_errno(), f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
    try:
        for path, rights in [*((f, handled) for f in folders), *((d, on_files) for d in DEVICES)]:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except FileNotFoundError:
                if path in DEVICES:
                    continue
                raise
            try:
                rule = ctypes.create_string_buffer(struct.pack("=Qi", rights, fd))
                if call(_SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), rule, 0) < 0:
                    err = ctypes.get_errno()
                    if path in DEVICES and err == errno.EBADFD:  # a pipe: no object of a file system, never restricted
                        continue
                    raise OSError(err, f"landlock_add_rule {path}: {os.strerror(err)}")
            finally:
                os.close(fd)
        if ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            err = ctypes.get_errno()
            raise Unconfined(err, f"PR_SET_NO_NEW_PRIVS: {os.strerror(err)}")
        if call(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) < 0:
            err = ctypes.get_errno()
            raise Unconfined(err, f"landlock_restrict_self: {os.strerror(err)}")
    finally:
        os.close(ruleset)
