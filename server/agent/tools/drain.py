"""One thread for what the Bash calls of a process leave open: every command's output read until its end, and every
supervisor waited for once its command ended.

A call returns when its command ends, but a background job it started may hold the output pipes, and its supervisor
stays while anything of the tree is left (`supervise.py`). Their output must still be read (a job writing to a full
pipe would block, one writing to a closed pipe would die) and the supervisor reaped; a thread for each of these
would leave a long-running server three more threads for every such call, for as long as the job lives. Here one
thread does it all, and ends when nothing is left to read or wait for.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import subprocess
import threading
from collections.abc import Callable
from typing import IO, Any

REAP_S = 0.5
"""How often the thread looks whether a supervisor it waits for has ended."""


class Drain:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._streams: dict[int, tuple[IO[bytes], Callable[[bytes], None], threading.Event]] = {}
        self._waited: list[tuple[subprocess.Popen[Any], Callable[[subprocess.Popen[Any]], None] | None]] = []
        self._thread: threading.Thread | None = None

    def read(self, stream: IO[bytes], take: Callable[[bytes], None]) -> threading.Event:
        """Read `stream` to its end, giving each chunk to `take` (on this module's thread, never after the end);
        the event is set at the end, once `stream` is closed."""
        ended = threading.Event()
        with self._lock:
            self._streams[stream.fileno()] = (stream, take, ended)
            self._selector.register(stream.fileno(), selectors.EVENT_READ)
            self._start()
        return ended

    def reap(self, proc: subprocess.Popen[Any], ended: Callable[[subprocess.Popen[Any]], None] | None = None) -> None:
        """Wait for `proc` (no zombie is left once it ends); then `ended(proc)`, on this module's thread."""
        with self._lock:
            self._waited.append((proc, ended))
            self._start()

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="bash-drain", daemon=True)
            self._thread.start()
        else:
            with contextlib.suppress(BlockingIOError):
                os.write(self._wake_w, b"x")  # a new stream or process: the thread looks again

    def _run(self) -> None:
        while True:
            with self._lock:
                done = [(p, then) for p, then in self._waited if p.poll() is not None]
                self._waited = [(p, then) for p, then in self._waited if p.returncode is None]
            for proc, then in done:
                if then is not None:
                    then(proc)
            with self._lock:
                if not self._streams and not self._waited:
                    self._thread = None
                    return
                timeout = REAP_S if self._waited else None
            for key, _ in self._selector.select(timeout):
                if key.fd == self._wake_r:
                    with contextlib.suppress(BlockingIOError):
                        os.read(self._wake_r, 4096)
                    continue
                self._take(key.fd)

    def _take(self, fd: int) -> None:
        stream, take, ended = self._streams[fd]
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            chunk = b""
        if chunk:
            take(chunk)
            return
        with self._lock:
            self._selector.unregister(fd)
            del self._streams[fd]
        stream.close()
        ended.set()


DRAIN = Drain()
