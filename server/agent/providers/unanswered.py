"""Waiting for a model's answer so that a cancel never waits on it.

The SDK's `messages.create(stream=True)` returns once the response's headers came; until then there is no response
to close, and a blocked socket read is not woken by closing it from another thread. A model endpoint that takes the
request and says nothing (a gateway, a proxy, an overloaded server) held a cancelled turn, its session and its place
in the turn pool, for the client's whole timeout (600 s). So the call runs on a thread of its own, and the turn waits
for its answer or for the cancel, whichever comes first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from server.agent.cancel import CancelToken

T = TypeVar("T")


def answer_or_cancel(call: Callable[[], T], cancel: CancelToken, drop: Callable[[T], None]) -> T | None:
    """`call()`'s result (or what it raised), or None when `cancel` came first. The call is then left to run out on
    its thread (a daemon: it never holds the process), and what it returns late is given to `drop` (a response is
    closed unread); what it raises late is dropped."""
    lock = threading.Lock()
    came = threading.Event()
    box: dict[str, object] = {}

    def run() -> None:
        try:
            result = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting turn, or dropped with the call
            with lock:
                box["error"] = exc
        else:
            with lock:
                if not box.get("gone"):
                    box["result"] = result
                    came.set()
                    return
            drop(result)
            return
        came.set()

    threading.Thread(target=run, name="model-request", daemon=True).start()
    unregister = cancel.on_cancel(came.set)
    try:
        came.wait()
    finally:
        unregister()
    with lock:
        if "error" in box:
            raise box["error"]  # type: ignore[misc]
        if "result" not in box:
            box["gone"] = True
            return None
        return box["result"]  # type: ignore[return-value]
