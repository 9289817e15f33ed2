"""The first index of a projects folder, started as soon as the folder is known: before pygls loads.

A cold language server (nothing of the folder in the index database) reads every session on worker processes
(`server.index.fill`). Over stdio the folder is known from the `initialize` answered before the server loads
(`server.lsp.early`), and the first request with no kept answer `start`s the first index in a process of its
own (`server.index.prefillchild`), which reads and stores the folder, then builds the `workspace/diagnostic`
report from it. Meanwhile the early reader answers a partial `sessions/list` on this process's core, and can
hold a `workspace/diagnostic` for that report (`server.lsp.firstreport`), without pygls; the server's first
index `wait`s for the folder to be stored before it scans, restoring those files from the database as on a
warm start. A listing asked meanwhile waits for the child's listing too (`FILLS`), as for a fill of its own.

It stores only what the files held when they were read (each session with the identities its files had then),
so a file changed meanwhile is seen by the server's scan that follows, as after any fill. When the child fails
or dies, the server's own first index reads what it did not store.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import server
from server.credentials import without_credentials
from storage.cache import cache_dir
from storage.indexdb import FILLS
from storage.projectroots import absolute

log = logging.getLogger(__name__)

_CHILD = "; ".join(
    (
        "import json, sys",
        "sys.path[:] = json.loads(sys.argv[1])",
        "from server.index.prefillchild import main",
        "sys.exit(main(sys.argv[2:]))",
    )
)
"""The child's program: it imports from this process's path, our own package first (`-I` leaves the working folder
and PYTHON* out, and with them a `PYTHONPATH` this process was given its packages by)."""


@dataclass
class Prefill:
    """One folder's first index under way in a child process: how far it got, and what it gave."""

    root: Path
    done: tuple[int, int] = (0, 0)
    """(files read, files to read)."""
    read_bytes: tuple[int, int] = (0, 0)
    """(bytes read, bytes of the folder)."""
    stored: threading.Event = field(default_factory=threading.Event)
    """Set once the folder is stored (or the child failed or ended)."""
    reported: threading.Event = field(default_factory=threading.Event)
    """Set once `report` is there (or the child failed or ended without it)."""
    report: bytes | None = None
    """The `workspace/diagnostic` report of the folder as stored (JSON)."""
    changed: threading.Condition = field(default_factory=threading.Condition)
    process: subprocess.Popen[bytes] | None = None


STALL = 120.0
"""Seconds without a file read after which the server stops waiting for the child (stuck) and indexes itself."""
_ENCODING = f"{sys.getfilesystemencoding()}:{sys.getfilesystemencodeerrors()}"
"""How this process decodes file names; the child indexes only when it decodes them the same way."""

_RUNNING: dict[Path, Prefill] = {}
_LOCK = threading.Lock()


def start(root: Path) -> Prefill | None:
    """Begin the first index of `root` in a child process (None: no index database, no folder, or an index of
    it already under way)."""
    root = Path(absolute(root))
    with _LOCK:
        if root in _RUNNING or cache_dir() is None or not root.is_dir():
            return None
        run = _RUNNING[root] = Prefill(root)
    package_root = str(Path(server.__file__).resolve().parent.parent)
    # not the folder Python put first (the script's or, for `-m`, the working folder: a checkout the editor opened)
    given = sys.path if sys.flags.safe_path else sys.path[1:]
    import_path = [package_root, *(entry for entry in given if entry and entry != package_root)]
    pid = str(os.getpid())
    # `-I` leaves out every PYTHON* variable: the UTF-8 mode this process runs in is passed on, so that the child
    # decodes file names as the server does (in the C locale, `PYTHONUTF8=0` makes them ASCII, `-I` UTF-8); the
    # child refuses to index when its file name encoding still differs
    try:
        run.process = subprocess.Popen(
            [
                sys.executable,
                "-I",
                "-X",
                f"utf8={sys.flags.utf8_mode}",
                "-c",
                _CHILD,
                json.dumps(import_path),
                str(root),
                pid,
                _ENCODING,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            close_fds=True,
            env=without_credentials(),  # it runs a new program, dumpable again: none of our credentials to read
        )
    except OSError as exc:
        log.warning("could not start the first index before the server loaded: %s", exc)
        with _LOCK:
            _RUNNING.pop(root, None)
        return None
    assert run.process.stdout is not None
    threading.Thread(target=_follow, args=(run, run.process.stdout), name="prefill", daemon=True).start()
    return run


def _follow(run: Prefill, out: IO[bytes]) -> None:
    """Read the child's messages until it ends; a listing asked meanwhile waits for its listing (`FILLS`)."""
    with FILLS.running():
        try:
            _read_messages(run, out)
        except (OSError, ValueError):
            log.warning("reading the first index's process failed", exc_info=True)
        finally:
            with run.changed:
                run.stored.set()
                run.reported.set()
                run.changed.notify_all()
            out.close()
            if run.process is not None:
                run.process.wait()


def _read_messages(run: Prefill, out: IO[bytes]) -> None:
    for line in iter(out.readline, b""):
        kind, _, rest = line.rstrip(b"\n").partition(b" ")
        if kind == b"p":
            done, total, read, size = (int(x) for x in rest.split())
            with run.changed:
                run.done, run.read_bytes = (done, total), (read, size)
                run.changed.notify_all()
        elif kind == b"i":
            with run.changed:
                run.stored.set()
                run.changed.notify_all()
            log.info("the folder was indexed before the server loaded")
        elif kind == b"r":
            length = int(rest)
            data = out.read(length)
            if len(data) == length:
                run.report = data
            run.reported.set()
        elif kind == b"e":
            log.warning("the first index before the server loaded failed: %s", rest.decode("utf-8", "replace"))


def running(root: Path) -> Prefill | None:
    with _LOCK:
        return _RUNNING.get(Path(absolute(root)))


def wait(root: Path, progress: Callable[[int, int, tuple[int, int]], None] | None = None) -> None:
    """Until the first index of `root` under way (if any) is stored; `progress` gets (files read, files, (bytes
    read, bytes)) as it goes."""
    run = running(root)
    if run is None:
        return
    seen = (-1, -1)
    moved = time.monotonic()
    while not run.stored.is_set():
        with run.changed:
            if run.done == seen and not run.stored.is_set():
                run.changed.wait(0.5)
            done, read_bytes = run.done, run.read_bytes
        if done != seen:
            moved = time.monotonic()
            if progress is not None:
                progress(done[0], done[1], read_bytes)
        elif time.monotonic() - moved > STALL and run.process is not None:
            log.warning("the first index's process read nothing for %.0f s: it is stopped, the server indexes", STALL)
            run.process.kill()  # its end sets `stored`; the server's own first index reads what it did not store
            run.stored.wait(STALL)
            return
        seen = done
