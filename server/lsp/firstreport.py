"""`workspace/diagnostic` at a cold start, answered before pygls loads: from the first index started as soon as
the projects folder was known (`server.index.prefill`).

An editor asks for every file's diagnostics as it starts, and a cold server (nothing of the folder in the index
database) has them once its first index is complete. The first index runs in a process of its own, which gives
the report the server's handler gives (`server.features.diagnosticreport`) and keeps it as the server keeps it;
the early reader holds the request meanwhile and answers it with that report, without loading pygls and
lsprotocol (0.3 s of CPU) beside the index's workers.

It is held `HOLD` seconds at most, and no longer once a message comes that must not wait for it (a request not
answered early, `exit`, `$/cancelRequest`, or the end of the input): the request then goes to the server as it
came, which answers it once the folder is stored, showing the first index's progress meanwhile. Other
notifications (`initialized`, `textDocument/didOpen`, ...) wait for the server, in the order they came.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from server.index.prefill import Prefill
    from server.lsp.readahead import Frame

HOLD = 2.0
"""Seconds a `workspace/diagnostic` is held for the first index at most; then the server loads and shows its
progress."""
POLL = 0.01
"""Seconds between looks at the first index while the client is silent."""
URGENT = ("exit", "$/cancelRequest")
"""Notifications that end the hold: they concern what is running."""


class Held:
    """A `workspace/diagnostic` waiting for the first index; `at` is its frame's place among those taken."""

    def __init__(self, request_id: Any, run: Prefill, at: int) -> None:
        self.request_id = request_id
        self.run = run
        self.at = at
        self.deadline = time.monotonic() + HOLD

    def ready(self) -> bool:
        return self.run.reported.is_set()

    def answer(self) -> bytes | None:
        """The report of every file (JSON); None when the first index gave none."""
        return self.run.report


def waits(frame: Frame) -> bool:
    """Whether a message that came while a request is held can wait for the server (a notification that concerns
    nothing running)."""
    message = frame.message
    return message is not None and "id" not in message and message.get("method") not in URGENT
