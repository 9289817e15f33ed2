"""The first index gives way to answers meant to come at once, within a budget.

A partial `sessions/list` reads only the heads and tails of the session files. Beside the first index in the same
process it shares one interpreter lock with the index's thread, and every read it makes hands the lock to the
index for up to a switch interval: on the 311 MiB folder it took 1.2-2.0 s instead of 0.5-1.1 s when the index
waits. While such an answer is computed the index waits between two files, but for `BUDGET` seconds in all, so a
client asking again and again delays the first index by that much at most.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

BUDGET = 5.0
"""Seconds the first index may spend waiting for quick answers, in all."""


class GiveWay:
    def __init__(self, budget: float = BUDGET) -> None:
        self._lock = threading.Lock()
        self._busy = 0
        self._idle = threading.Event()
        self._idle.set()
        self.left = budget
        """Seconds of waiting left (only the index's thread waits)."""

    @contextmanager
    def answering(self) -> Iterator[None]:
        """While the block runs, `wait` waits."""
        with self._lock:
            self._busy += 1
            self._idle.clear()
        try:
            yield
        finally:
            with self._lock:
                self._busy -= 1
                if self._busy == 0:
                    self._idle.set()

    def wait(self) -> bool:
        """Wait until no quick answer is being computed, or the budget is spent; whether none is."""
        if self._idle.is_set() or self.left <= 0:
            return self._idle.is_set()
        began = time.monotonic()
        idle = self._idle.wait(self.left)
        self.left = max(0.0, self.left - (time.monotonic() - began))
        return idle
