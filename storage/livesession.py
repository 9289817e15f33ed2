"""The real CLI's registry of live sessions, read and written so neither side writes into a
session the other is running.

Claude Code 2.1.328 keeps one record per running process in `<config>/sessions/<pid>.json`
(`pid`, `sessionId`, `cwd`, `startedAt`, `procStart`, `version`, `kind`, `entrypoint`, ...), made
mode 0600 in a 0700 folder and removed at exit; records whose pid is dead are swept. It consults
the registry in two places:

- `--session-id <id>` refuses with `Error: Session ID <id> is already in use.` when
  `<project folder of cwd>/<id>.jsonl` already exists (a file check, not a process check);
- `--resume <id>` (without `--fork-session`) lists the live records for `<id>` (pid alive, not
  itself, `procStart` equal when recorded) and refuses when one has a `kind` other than
  `interactive` (`bg`, `daemon`, `daemon-worker`): "... is running in the background ... Add
  --fork-session to branch off a copy instead." An interactive holder does not stop it.

We honour it both ways: before we write into a session we look for any live record of it (any
kind, so we are stricter than the CLI), and while we write we register ourselves with kind `bg`,
the kind that makes the CLI refuse to resume (forking stays allowed, as for the CLI's own jobs).
"""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from storage.errors import InUse, Unsafe
from storage.locking import open_private_below
from storage.paths import config_home
from storage.procinfo import pid_alive, proc_start, start_of, stat_fields
from storage.wholefile import put_whole

OUR_KIND = "bg"
_MARK_LOCK = threading.Lock()


class SessionInUse(InUse):
    """Another live process (the real CLI or another writer of ours) is running this session."""

    def __init__(self, session_id: str, holder: LiveRecord) -> None:
        self.session_id = session_id
        self.record = holder
        who = holder.entrypoint or "claude"
        super().__init__(
            f"Session ID {session_id} is already in use by a running {who} process "
            f"(pid {holder.pid}, kind {holder.kind or '?'}, record {holder.path})",
            {"pid": holder.pid, "kind": holder.kind, "entrypoint": holder.entrypoint, "record": str(holder.path)},
        )


@dataclass(frozen=True)
class LiveRecord:
    pid: int
    session_id: str | None
    kind: str | None
    entrypoint: str | None
    cwd: str | None
    path: Path


def sessions_dir(config_dir: Path | None = None) -> Path:
    return (config_dir or config_home()) / "sessions"


def config_dir_of(projects_dir: Path) -> Path:
    """The config home a projects folder belongs to (`<home>/projects`)."""
    return projects_dir.parent


def record_alive(pid: int, recorded_start: object) -> bool:
    """Alive, and (when both are known) started when the record says: a reused pid is not. A zombie (ended, not yet
    reaped by its parent) is not alive: it writes nothing more. The CLI 2.1.328 takes one for alive all the same, so
    a record of ours left by a writer killed before its parent reaped it kept the CLI off the session; a later writer
    of ours removes such records (`sweep_ours`)."""
    if not pid_alive(pid):
        return False
    fields = stat_fields(pid)
    if fields is not None and fields[0] in ("Z", "X"):
        return False
    if isinstance(recorded_start, str):
        now = start_of(fields)
        if now is not None and now != recorded_start:
            return False
    return True


def record_live(pid: int, data: dict[str, Any]) -> bool:
    """Whether the record `<pid>.json` holding `data` names a writer still running: its process alive
    (`record_alive`), or, for a record of ours made under a guard child (`LiveMark`), the writer process the guard
    stands for. A command that SIGKILLs a guard leaves it a zombie while that writer still writes: its record must
    keep the CLI off the session until the writer lets it go."""
    if record_alive(pid, data.get("procStart")):
        return True
    writer = data.get("writerPid")
    return (
        data.get("writer") == "session-lsp"
        and isinstance(writer, int)
        and writer != pid
        and record_alive(writer, data.get("writerStart"))
    )


RECORD_BYTES = 64 * 1024
"""A record is a small JSON object; more than this is not one."""


def _read(path: Path) -> dict[str, Any] | None:
    """A record's JSON object; None for anything else: damaged, too big, a symlink, or no regular
    file at all (a FIFO would block the reader, a link to a device would never end)."""
    got = _read_file(path)
    return got[0] if got is not None else None


def _read_file(path: Path) -> tuple[dict[str, Any], tuple[int, int]] | None:
    """`_read`, with the file's identity (device, inode) as read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        raw = os.read(fd, RECORD_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        data = orjson.loads(raw) if len(raw) <= RECORD_BYTES else None
    except orjson.JSONDecodeError:
        return None
    return (data, (st.st_dev, st.st_ino)) if isinstance(data, dict) else None


def _remove_record(path: Path, identity: tuple[int, int] | None = None) -> None:
    """Remove the record `path`, its registry folder reached below its config home taking no link
    (`open_private_below`); with `identity`, only while it is still that file (ours are put in place whole, by a
    rename: a record written since is another file). Nothing where the folder became a link (`Unsafe`) or anything
    fails."""
    with contextlib.suppress(OSError, Unsafe):
        folder = open_private_below(path.parent.parent, [path.parent.name], path)
        try:
            now = os.stat(path.name, dir_fd=folder, follow_symlinks=False)
            if identity is None or (now.st_dev, now.st_ino) == identity:
                os.unlink(path.name, dir_fd=folder)
        finally:
            os.close(folder)


def live_records(config_dir: Path | None = None) -> list[LiveRecord]:
    """Records whose process is alive (a record naming a dead pid is ignored)."""
    root = sessions_dir(config_dir)
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []
    out = []
    for name in names:
        stem, _, ext = name.partition(".")
        if ext != "json" or not stem.isdigit() or str(int(stem)) != stem:
            continue
        pid = int(stem)
        data = _read(root / name)
        if data is None or not record_live(pid, data):
            continue
        sid = data.get("sessionId")
        kind = data.get("kind")
        entry = data.get("entrypoint")
        cwd = data.get("cwd")
        out.append(
            LiveRecord(
                pid,
                sid if isinstance(sid, str) else None,
                kind if isinstance(kind, str) else None,
                entry if isinstance(entry, str) else None,
                cwd if isinstance(cwd, str) else None,
                root / name,
            )
        )
    return out


def config_homes(config_dir: Path | None = None) -> list[Path]:
    """Every config home whose CLI may be running a session of `config_dir`'s projects folder: `config_dir` itself
    (default: the environment's config home), the parent of the projects folder's real path, and the environment's
    config home when its projects folder is the same folder. A CLI registers only in its own home, so with
    `~/.claude/projects` a link to another disk, a writer that named the folder by its real path looked in
    `<disk>/sessions` alone and never saw the CLI of `~/.claude` running the session."""
    given = config_dir or config_home()
    real = os.path.realpath(given / "projects")
    homes = [given]
    for home in (Path(real).parent, config_home()):
        if home not in homes and os.path.realpath(home / "projects") == real:
            homes.append(home)
    return homes


def holder_of(session_id: str, config_dir: Path | None = None) -> LiveRecord | None:
    """A live process that runs `session_id`, if any (this process too: a second recorder of
    ours for a session already being recorded is refused as well), in the registry of every config home of the
    projects folder (`config_homes`)."""
    want = session_id.lower()
    for home in config_homes(config_dir):
        for rec in live_records(home):
            if rec.session_id and rec.session_id.lower() == want:
                return rec
    return None


def sweep_ours(config_dir: Path | None = None) -> None:
    """Remove, from the registry of every config home of the projects folder, the records of writers of ours whose
    process is gone, a zombie or its pid another process's (`record_live`: for a record made under a guard, the
    writer it stands for too): left by a writer killed (SIGKILL) while it held a session. The CLI sweeps the records
    of dead processes itself, but takes a zombie's for live ("running in the background"). Only records we wrote
    (`writer`), each while it is still the file read."""
    for home in config_homes(config_dir):
        root = sessions_dir(home)
        if not root.is_dir() or root.is_symlink():
            continue
        try:
            names = os.listdir(root)
        except OSError:
            continue
        for name in names:
            stem, _, ext = name.partition(".")
            if ext != "json" or not stem.isdigit() or str(int(stem)) != stem:
                continue
            got = _read_file(root / name)
            if got is None or got[0].get("writer") != "session-lsp":
                continue
            if not record_live(int(stem), got[0]):
                _remove_record(root / name, got[1])


def ensure_free(session_id: str, config_dir: Path | None = None) -> None:
    sweep_ours(config_dir)
    holder = holder_of(session_id, config_dir)
    if holder is not None:
        raise SessionInUse(session_id, holder)


_MARKED_BY_US: dict[Path, str] = {}
"""Registry files this process holds, to their session id."""


GUARD_ENVIRONMENT = ("LD_LIBRARY_PATH",)
"""All a guard child is given of our environment: what an interpreter may need to start, nothing else."""


def _guard_process() -> subprocess.Popen[bytes]:
    """A child that lives exactly as long as we do (it exits when its stdin pipe closes).

    It runs a new program, so it is dumpable again (`server/agent/tools/concealed.py`): any process of our user
    reads its `/proc/<pid>/environ`. So it starts with none of ours (the provider's key, the store's password, the
    server's token): before, a Bash call of a turn running beside another read them there."""
    with _GUARD_LOCK:  # a fork waits meanwhile: no guard's pipe is open and not yet known to `_forget_guards`
        guard = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", "import sys; sys.stdin.buffer.read()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=True,
            env={name: os.environ[name] for name in GUARD_ENVIRONMENT if name in os.environ},
        )
        assert guard.stdin is not None  # started with stdin=PIPE
        _GUARDED.add(guard.stdin.fileno())
    return guard


def _end_guard(guard: subprocess.Popen[bytes]) -> None:
    """Close our end of the guard's standard input (it exits at its end of file), forgotten first."""
    assert guard.stdin is not None  # started with stdin=PIPE
    with _GUARD_LOCK, contextlib.suppress(OSError):
        _GUARDED.discard(guard.stdin.fileno())
        guard.stdin.close()


_GUARDED: set[int] = set()
"""The write ends of the live guards' standard input."""
_GUARD_LOCK = threading.Lock()


def _forget_guards() -> None:
    """In a forked child (an index worker, forked while turns write): the guards' pipes are not the child's to hold.
    A copy held there kept a guard running, and its writer's `release` waiting for it, as long as the child ran."""
    global _GUARD_LOCK
    _GUARD_LOCK = threading.Lock()  # held by the forking thread, in the parent
    for fd in _GUARDED:
        with contextlib.suppress(OSError):
            os.close(fd)
    _GUARDED.clear()


os.register_at_fork(
    before=lambda: _GUARD_LOCK.acquire(), after_in_parent=lambda: _GUARD_LOCK.release(), after_in_child=_forget_guards
)


def _put_record(path: Path, record: dict[str, Any]) -> None:
    """Write a registry record whole. The registry folder is walked below its config home taking no link: one that is
    a link (or no folder) gets no record (`Unsafe`, naming it), and the record is put in place whole by name in the
    folder opened (a link or a FIFO planted under its name is replaced, never followed)."""
    try:
        folder = open_private_below(path.parent.parent, [path.parent.name], path)
    except Unsafe:
        raise Unsafe(
            f"{path.parent} is a symbolic link or no folder: session-lsp writes no live-session record through it, "
            f"and without one a Claude Code of {path.parent.parent} would take session {record.get('sessionId')} "
            f"for free; nothing written (make {path.parent} a folder of its own, as Claude Code makes it)"
        ) from None
    try:
        put_whole(folder, path.name, orjson.dumps(record), path, replace=True)
    finally:
        os.close(folder)


class LiveMark:
    """Our own record in the registry for one session, removed on `release()`.

    The CLI allows one record per pid, named `<pid>.json`. The first session of a process is
    registered under its own pid; each further one under a guard child that exits when we do,
    so a record never outlives its writer (a crash leaves a dead pid, which both sides ignore, and which the next
    writer of ours removes: `sweep_ours`; the CLI takes a zombie's record for live until then).

    The record is made in the registry of the config home as given and also in that of every other config home of
    the same projects folder (`config_homes`) whose registry exists (a CLI ran there): a CLI of another name
    of the folder (`~/.claude/projects` a link to another disk) reads only its own registry, and resumed the session
    we were writing. A registry that is a link (to a folder outside, or to nowhere) or no folder, there as in the
    home given, gets no record and refuses the writer (`Unsafe`): nothing is written through a link, and the CLI
    of that home would not see us (before, the writer went on without that record). One we cannot write (another
    user's, a read-only disk) gets none.
    """

    def __init__(
        self,
        session_id: str,
        cwd: str,
        *,
        config_dir: Path | None = None,
        version: str = "",
        entrypoint: str = "session-lsp",
    ) -> None:
        self.root = sessions_dir(config_dir)
        others = [sessions_dir(home) for home in config_homes(config_dir)[1:]]
        self.others = [registry for registry in others if os.path.lexists(registry)]
        """The registries of the folder's other config homes that exist, as anything (a link to nowhere too): a record
        there too (see the docstring)."""
        self.session_id = session_id
        self.guard: subprocess.Popen[bytes] | None = None
        self.record: dict[str, Any] = {
            "sessionId": session_id,
            "cwd": cwd,
            "startedAt": int(time.time() * 1000),
            "version": version,
            "kind": OUR_KIND,
            "entrypoint": entrypoint,
            "writer": "session-lsp",
        }
        self.path = self.root / f"{os.getpid()}.json"
        self.paths: list[Path] = []
        """Every record made: `path` first."""
        self.held = False

    def acquire(self) -> None:
        with _MARK_LOCK:
            pid = os.getpid()
            roots = [self.root, *self.others]
            if any(root / f"{pid}.json" in _MARKED_BY_US for root in roots):
                self.guard = _guard_process()
                pid = self.guard.pid
                self.record["writerPid"] = os.getpid()  # the record stays live while we are (`record_live`)
                writer_start = proc_start(os.getpid())
                if writer_start is not None:
                    self.record["writerStart"] = writer_start
            self.path = self.root / f"{pid}.json"
            self.paths = [root / f"{pid}.json" for root in roots]
            for path in self.paths:
                _MARKED_BY_US[path] = self.session_id
        self.record = {"pid": pid, **self.record}
        start = proc_start(pid)
        if start is not None:
            self.record["procStart"] = start
        self.held = True
        try:
            _put_record(self.path, self.record)
            for path in self.paths[1:]:
                with contextlib.suppress(OSError):  # another home's registry we cannot write: none there
                    _put_record(path, self.record)
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        for path in self.paths:
            got = _read_file(path)
            if got is not None and got[0].get("sessionId") == self.session_id:
                _remove_record(path, got[1])  # a folder swapped for a link since: nothing removed there
        with _MARK_LOCK:
            for path in self.paths:
                _MARKED_BY_US.pop(path, None)
        if self.guard is not None:
            _end_guard(self.guard)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.guard.wait(timeout=5)
            self.guard = None
