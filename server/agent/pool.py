"""A bounded set of running turns: at most `limit` at once, each cancellable, all stoppable.

A turn past the bound is refused at once with `Busy` rather than queued behind turns that may be
waiting on a model or a tool, so a client always gets an answer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from server.agent.cancel import CancelToken
from storage.errors import Busy

T = TypeVar("T")
DEFAULT_LIMIT = 4


class TurnPool:
    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._active: dict[int, CancelToken] = {}
        self._idle = threading.Condition(self._lock)
        self._next = 0
        self._executor = ThreadPoolExecutor(max_workers=limit, thread_name_prefix="turn")

    @property
    def running(self) -> int:
        with self._lock:
            return len(self._active)

    def submit(self, fn: Callable[[], T], token: CancelToken) -> Future[T]:
        """Run `fn` on a turn thread, or raise `Busy` when `limit` turns are running."""
        with self._lock:
            if len(self._active) >= self.limit:
                raise Busy(f"{self.limit} agent turns are already running; wait for one to end or cancel one")
            key = self._next
            self._next += 1
            self._active[key] = token
        try:
            future = self._executor.submit(fn)
        except BaseException:
            self._done(key)
            raise
        future.add_done_callback(lambda _f: self._done(key))
        return future

    def _done(self, key: int) -> None:
        with self._lock:
            self._active.pop(key, None)
            self._idle.notify_all()

    def cancel_all(self) -> None:
        with self._lock:
            tokens = list(self._active.values())
        for token in tokens:
            token.cancel()

    def wait_idle(self, timeout: float) -> bool:
        """True once no turn runs; False if some still run after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._active:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
            return True
