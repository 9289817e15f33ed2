"""What `/proc` tells of another process: whether it lives, its parent, when it started. Standard library only (the
language server reads it before anything else loads)."""

from __future__ import annotations

import os


def stat_fields(pid: int) -> list[str] | None:
    """The fields of `/proc/<pid>/stat` after the command name (the state first, then the parent's pid, ...; the start
    time is the 20th); None where there is no such file (gone, or not Linux)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            stat = fh.read()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2 :].split(" ")


def start_of(fields: list[str] | None) -> str | None:
    """The start time among a process's `stat_fields` (field 22 of `/proc/<pid>/stat`); None where it is not there."""
    return fields[19] if fields is not None and len(fields) > 19 else None


def proc_start(pid: int) -> str | None:
    """The process start time as the CLI records it (`procStart`); None where that is not available."""
    return start_of(stat_fields(pid))


def pid_alive(pid: int) -> bool:
    """A process of that id exists (a zombie too); never pid 0 or 1 (a registry rule: those are no writer)."""
    if pid <= 1:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
