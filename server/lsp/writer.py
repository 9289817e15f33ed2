"""Writing LSP frames to the client whole, one at a time.

pygls writes a frame with one `write` on the output stream from whichever thread answers or notifies: a request
answered on a worker thread, the first index's `$/progress`, `sessions/didChange` from the watcher. A buffered
stream does not keep two threads' writes apart: a frame larger than its buffer goes out in pieces, and a
notification sent meanwhile lands inside it, which breaks the client's framing (seen: a 613 KiB
`sessions/list` answer with a `$/progress` report 452 KiB into it). Here every frame is written and flushed under
one lock.
"""

from __future__ import annotations

import threading
from typing import BinaryIO


class FrameWriter:
    """pygls's writer interface over a binary stream: `write` sends one whole frame, `close` closes the stream."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def write(self, data: bytes) -> None:
        with self._lock:
            self._stream.write(data)
            self._stream.flush()

    def close(self) -> None:
        self._stream.close()  # not under the lock: a write stuck on a client that stopped reading must not hold it
