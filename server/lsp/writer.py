"""Writing LSP frames to the client whole, one at a time.

pygls writes a frame with one `write` on the output stream from whichever thread answers or notifies: a request
answered on a worker thread, the first index's `$/progress`, `sessions/didChange` from the watcher. A buffered
stream does not keep two threads' writes apart: a frame larger than its buffer goes out in pieces, and a
notification sent meanwhile lands inside it, which breaks the client's framing (seen: a 613 KiB
`sessions/list` answer with a `$/progress` report 452 KiB into it). Here every frame is written and flushed under
one lock.
"""

from __future__ import annotations

import json
import threading
from typing import Any, BinaryIO


class JsonText(bytes):
    """A request's result that is JSON text already (UTF-8): answered as it is, not converted again by pygls."""


def answer_frame(request_id: Any, result: bytes) -> bytes:
    """The whole frame of an answer whose result is JSON text already."""
    body = b'{"jsonrpc":"2.0","id":%b,"result":%b}' % (json.dumps(request_id).encode(), result)
    return b"Content-Length: %d\r\n\r\n%b" % (len(body), body)


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
