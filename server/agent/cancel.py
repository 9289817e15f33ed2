"""Cancellation for a running turn: a thread-safe token that also wakes blocked I/O."""

from __future__ import annotations

import threading
from collections.abc import Callable


class TurnCancelled(Exception):
    """Raised inside the loop when the turn's token is cancelled."""


class CancelToken:
    """Set once by any thread; callbacks (e.g. closing an HTTP stream) run when it is set."""

    def __init__(self, event: threading.Event | None = None) -> None:
        self._event = event or threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        with self._lock:
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            try:
                fn()
            except Exception:  # noqa: BLE001 - a failing waker must not stop the others
                pass

    def on_cancel(self, fn: Callable[[], None]) -> Callable[[], None]:
        """Run `fn` on cancel (now, if already cancelled); returns a function that unregisters it."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(fn)
                return lambda: self._remove(fn)
        fn()
        return lambda: None

    def _remove(self, fn: Callable[[], None]) -> None:
        with self._lock:
            if fn in self._callbacks:
                self._callbacks.remove(fn)

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)

    def check(self) -> None:
        if self._event.is_set():
            raise TurnCancelled()


def as_token(cancel: CancelToken | threading.Event | None) -> CancelToken:
    """Accept a token, a plain threading.Event (polled and woken), or nothing."""
    if isinstance(cancel, CancelToken):
        return cancel
    return CancelToken(cancel)
