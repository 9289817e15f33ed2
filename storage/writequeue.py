"""An ordered, batched append queue for transcript files.

Lines are queued per file in order; a flush writes each file's pending lines as one `O_APPEND`
write of whole lines under the file's advisory lock, sealing a torn tail (a last line without
`\\n`) first. Flushes happen on a short timer (100 ms, as the CLI), on demand, and at exit.
A flush reports the keys (row uuids) it made durable:

- default mode: the write(2) returned, so the lines are in the kernel and survive the death of
  this process (even SIGKILL), but not a power loss or kernel crash;
- `fsync=True`: the file (and, when we created it, its folder) were fsynced as well, so the
  lines survive a power loss too (as far as the disk honours flushes).
"""

from __future__ import annotations

import atexit
import os
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from storage.errors import InUse, SessionLspError, WriteFailed
from storage.locking import locked_append_fd
from storage.wholefile import write_all

FLUSH_INTERVAL = 0.1
MAX_BATCH_BYTES = 8 * 1024 * 1024


@dataclass
class TornTail:
    """A file that did not end in `\\n` and was sealed with one before our append."""

    path: Path
    offset: int


@dataclass
class _Pending:
    path: Path
    data: bytes
    key: str | None


@dataclass
class FlushResult:
    durable: list[str] = field(default_factory=list)
    sealed: list[TornTail] = field(default_factory=list)
    errors: list[tuple[Path, OSError | SessionLspError]] = field(default_factory=list)
    """Appends that failed (their lines stay queued): an OS error, or a refusal of `storage.access`."""


def _ends_with_newline(fd: int) -> tuple[bool, int]:
    size = os.fstat(fd).st_size
    if size == 0:
        return True, 0
    return os.pread(fd, 1, size - 1) == b"\n", size


class ForeignAppend(InUse):
    """A file we write as its only admitted writer changed size by bytes we did not write."""


class Vanished(InUse):
    """A file that existed (we resumed it or wrote it) is gone, or its folder is: appending would make a
    new file holding only the lines after the loss, so nothing is written."""


class AppendFailed(WriteFailed):
    """The system refused an append (a read-only or immutable file or folder, a full disk, an I/O error):
    nothing of it was written and its lines stay queued."""

    def __init__(self, path: Path, exc: OSError, queued: int) -> None:
        message = (
            f"{path}: appending to this session failed ({exc.strerror or exc}); {queued} queued line(s) not written"
        )
        super().__init__(exc, path, message)


def append_lines(
    path: Path,
    data: bytes,
    *,
    fsync: bool = False,
    ends: dict[Path, int] | None = None,
    create: bool = True,
    folders: bool = True,
) -> TornTail | None:
    """Append whole lines to `path` in one locked `O_APPEND` write; seal a torn tail first. Missing
    folders on the way are made 0700 (with `create` and `folders`; with `create` alone the file may be
    made but a missing folder raises `Vanished`, and without `create` a missing file does too); a path that no
    longer is what `storage.access` decided raises (see
    `storage.access.open_decided`) and nothing is written. With `ends` (a sole writer's record of
    where its last append to each file ended), a file that grew or shrank since raises `ForeignAppend`
    and nothing is written: someone that takes no lock (the real CLI) writes into it too."""
    made: list[str] = []
    existed = path.exists()
    try:
        with locked_append_fd(path, made=made if folders else None, create=create) as fd:
            torn = _append_locked(fd, path, data, fsync=fsync, ends=ends)
    except FileNotFoundError:
        if create and folders:
            raise
        raise Vanished(
            f"{path}: this session's file or its folder was moved or deleted while we wrote it; "
            "nothing more is written into it"
        ) from None
    if fsync and (made or not existed):
        for d in {path.parent, *(Path(c).parent for c in made)}:
            _fsync_dir(d)
    return torn


def _append_locked(fd: int, path: Path, data: bytes, *, fsync: bool, ends: dict[Path, int] | None) -> TornTail | None:
    ok, size = _ends_with_newline(fd)
    expected = None if ends is None else ends.get(path)
    if expected is not None and size != expected:
        change = f"appended {size - expected} bytes to" if size > expected else "cut"
        raise ForeignAppend(
            f"{path}: another process {change} this session while we were its admitted writer "
            "(the real CLI takes no lock of ours); nothing more is written into it"
        )
    torn = None if ok else TornTail(path, size)
    out = data if ok else b"\n" + data
    try:
        write_all(fd, out)
    except OSError:
        _cut_back(fd, size, len(out))
        raise
    if ends is not None:
        ends[path] = size + len(out)
    if fsync:
        os.fsync(fd)
    return torn


def _cut_back(fd: int, size: int, length: int) -> None:
    """After a write that failed part way (a full disk takes what fits, then refuses the rest): the file is cut
    back to `size`, where it ended before, so it keeps whole lines and its size is still the one a sole writer
    recorded. Only bytes that can be ours are cut: a file now longer than `size + length` is left as it is."""
    try:
        now = os.fstat(fd).st_size
        if size < now <= size + length:
            os.ftruncate(fd, size)
    except OSError:
        pass


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class WriteQueue:
    """Queue lines for files; `flush()` appends them in order and returns the keys now durable."""

    def __init__(
        self,
        *,
        fsync: bool = False,
        interval: float | None = FLUSH_INTERVAL,
        on_torn: Callable[[TornTail], None] | None = None,
        trailer: Callable[[Path, list[str | None]], bytes | None] | None = None,
        sole_writer: bool = False,
        on_made: Callable[[Path], None] | None = None,
    ) -> None:
        """`trailer(path, keys)` may return lines to end each batch for `path` with. A `sole_writer`
        queue (its writer was admitted, `storage.admission`) refuses to append to a file that changed
        since its own last append to it (`ForeignAppend`), keeping the lines queued. `on_made(path)` is
        called after the append that made `path` (a file not `expect`ed, appended to for the first time)."""
        self.fsync = fsync
        self._ends: dict[Path, int] | None = {} if sole_writer else None
        self._existing: set[Path] = set()
        """Files that exist (told by `expect`, or appended to): never made again if they vanish."""
        self._in_folders: set[Path] = set()
        """Files whose folder exists (told by `expect_folder`): the file may be made, the folder never again."""
        self.interval = interval
        self.on_torn = on_torn
        self.on_made = on_made
        self.trailer = trailer
        self.sealed: list[TornTail] = []
        self._pending: list[_Pending] = []
        self._durable_since_report: list[str] = []
        self._lock = threading.Lock()  # guards the pending list
        self._io = threading.Lock()  # one flush at a time keeps the order
        self._wake = threading.Event()
        self._closed = False
        self._timer: threading.Thread | None = None
        _LIVE.add(self)

    def put(self, path: Path, line: bytes, key: str | None = None) -> None:
        """Queue one `\\n`-terminated line for `path`."""
        if not line.endswith(b"\n"):
            raise ValueError("a queued line must end with \\n")
        with self._lock:
            if self._closed:
                raise RuntimeError("write queue is closed")
            self._pending.append(_Pending(Path(path), line, key))
            self._start_timer()
        self._wake.set()

    def expect(self, path: Path, size: int | None = None) -> None:
        """`path` exists (a resumed session's file): if it or its folder is gone at a flush, nothing is
        created and the flush reports `Vanished`, as for a file this queue appended to before. `size`: its size
        before its writer read it; a sole writer's first append to a file grown or cut since is `ForeignAppend`
        (someone wrote after what the writer read, as between two appends of its own)."""
        with self._lock:
            self._existing.add(Path(path))
            if size is not None and self._ends is not None:
                self._ends.setdefault(Path(path), size)

    def expect_folder(self, path: Path) -> None:
        """The folder of `path` exists (a subagent's, made with its `.meta.json`): `path` may be created at a
        flush, but if its folder is gone nothing is made and the flush reports `Vanished`."""
        with self._lock:
            self._in_folders.add(Path(path))

    def known(self, path: Path) -> bool:
        """Whether `path` exists as far as this queue knows (`expect`ed, or appended to)."""
        with self._lock:
            return Path(path) in self._existing

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def _start_timer(self) -> None:
        if self.interval is None or self._timer is not None:
            return
        self._timer = threading.Thread(target=self._run, name="session-lsp-writequeue", daemon=True)
        self._timer.start()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            if not self._closed:
                threading.Event().wait(self.interval)  # let rows of one burst join one batch
            self._wake.clear()
            try:
                self._flush_pending()
            except Exception:  # noqa: BLE001 - the next explicit flush reports it
                pass
            if self._closed:  # checked after the clear: a `close()` during the wait must not leave us waiting
                return

    def _flush_pending(self) -> FlushResult:
        result = FlushResult()
        with self._io:
            with self._lock:
                batch, self._pending = self._pending, []
            if not batch:
                return result
            # Group runs per file, keeping the global order of first appearance.
            order: list[Path] = []
            groups: dict[Path, list[_Pending]] = {}
            for item in batch:
                if item.path not in groups:
                    order.append(item.path)
                    groups[item.path] = []
                groups[item.path].append(item)
            failed: list[_Pending] = []
            for path in order:
                items = groups[path]
                chunks = _chunks(items)
                for n, chunk in enumerate(chunks):
                    data = b"".join(i.data for i in chunk)
                    if self.trailer is not None and n == len(chunks) - 1:
                        data += self.trailer(path, [i.key for i in items]) or b""
                    with self._lock:
                        create = path not in self._existing
                        folders = path not in self._in_folders
                    try:
                        torn = append_lines(
                            path, data, fsync=self.fsync, ends=self._ends, create=create, folders=folders
                        )
                    except (OSError, SessionLspError) as exc:
                        result.errors.append((path, exc))
                        failed.extend(chunk)
                        continue
                    with self._lock:
                        self._existing.add(path)
                    if create and self.on_made is not None:
                        self.on_made(path)
                    if torn is not None:
                        result.sealed.append(torn)
                        self.sealed.append(torn)
                        if self.on_torn:
                            self.on_torn(torn)
                    result.durable.extend(i.key for i in chunk if i.key)
            if failed:
                with self._lock:
                    self._pending[0:0] = failed
            with self._lock:
                self._durable_since_report.extend(result.durable)
        return result

    def flush(self) -> FlushResult:
        """Write everything queued now. `durable` lists every key made durable since the previous
        `flush()` call, including what the timer wrote meanwhile."""
        result = self._flush_pending()
        with self._lock:
            result.durable, self._durable_since_report = self._durable_since_report, []
        if result.errors:
            path, exc = result.errors[0]
            if isinstance(exc, SessionLspError):
                raise exc
            raise AppendFailed(path, exc, self.pending) from exc
        return result

    def close(self) -> FlushResult:
        try:
            return self.flush()
        finally:
            self._closed = True
            self._wake.set()
            _LIVE.discard(self)

    def discard(self) -> int:
        """Close without writing: the lines still queued are dropped (their writer's right to write ends here), the
        timer ends, and nothing is written at exit; returns how many lines were dropped."""
        with self._io:  # a flush under way ends first
            with self._lock:
                dropped, self._pending = len(self._pending), []
                self._closed = True
        self._wake.set()
        _LIVE.discard(self)
        timer = self._timer
        if timer is not None and timer is not threading.current_thread():
            timer.join()
        return dropped


def _chunks(items: list[_Pending]) -> list[list[_Pending]]:
    out: list[list[_Pending]] = [[]]
    size = 0
    for item in items:
        if out[-1] and size + len(item.data) > MAX_BATCH_BYTES:
            out.append([])
            size = 0
        out[-1].append(item)
        size += len(item.data)
    return out


_LIVE: weakref.WeakSet[WriteQueue] = weakref.WeakSet()


@atexit.register
def flush_all() -> None:
    """Flush every live queue (at exit, and before a process ends itself with `os._exit`)."""
    for queue in list(_LIVE):
        try:
            queue.flush()
        except Exception:  # noqa: BLE001 - exiting anyway
            pass
