"""Frames read from stdin before the server loads, and the stream handed over to it afterwards.

`FrameReader` reads the file descriptor itself into a buffer of its own, so that nothing is left in a buffered
reader's hands: the frames it takes out are the caller's, and every byte it did not take (a frame not whole
yet, a malformed one, whatever followed) reaches the server's strict frame reader unchanged through `Replay`.
"""

from __future__ import annotations

import json
import os
import select
import time
from typing import Any, BinaryIO, NamedTuple

MAX_HEADER_LINE = 8 * 1024
MAX_HEADERS = 32
MAX_AHEAD = 1024 * 1024
"""A frame larger than this is not read ahead (`initialize` and the requests answered early are a few KiB)."""
CHUNK = 65536


class Frame(NamedTuple):
    raw: bytes
    message: dict[str, Any] | None
    """The frame's JSON object; None when its body is not one."""


class FrameReader:
    """Whole frames from a file descriptor; a wait may be bounded by a deadline (`time.monotonic`)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""
        self.ended = False

    @classmethod
    def of(cls, stream: BinaryIO) -> FrameReader | None:
        """A reader of the stream's descriptor; None for a stream without one (nothing is read ahead)."""
        try:
            return cls(stream.fileno())
        except (AttributeError, OSError, ValueError):
            return None

    def _fill(self, deadline: float | None) -> bool:
        """Read what is there (waiting until `deadline` at most); False when nothing more came."""
        if self.ended:
            return False
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([self.fd], [], [], wait)[0]:
                return False
        chunk = os.read(self.fd, CHUNK)
        self.ended = not chunk
        self.buffer += chunk
        return bool(chunk)

    def take(self, deadline: float | None = None) -> Frame | None:
        """The next frame, taken out of the buffer; None when no whole, well-formed frame of at most
        `MAX_AHEAD` bytes came (before `deadline`, or before the stream ended): the buffer then keeps every byte."""
        pos, length, count = 0, None, 0
        while True:
            nl = self.buffer.find(b"\n", pos)
            if nl < 0:
                if len(self.buffer) - pos > MAX_HEADER_LINE or not self._fill(deadline):
                    return None
                continue
            line, pos = self.buffer[pos : nl + 1], nl + 1
            if line in (b"\r\n", b"\n"):
                break
            count += 1
            name, sep, value = line.decode("latin-1").partition(":")
            if not sep or count > MAX_HEADERS or len(line) > MAX_HEADER_LINE:
                return None
            if name.strip().lower() == "content-length":
                text = value.strip()
                length = int(text) if text.isascii() and text.isdigit() else None
        if count == 0 or length is None or length > MAX_AHEAD:
            return None
        total = pos + length
        while len(self.buffer) < total:
            if not self._fill(deadline):
                return None
        raw, self.buffer = self.buffer[:total], self.buffer[total:]
        try:
            message = json.loads(raw[pos:])
        except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes
            message = None
        return Frame(raw, message if isinstance(message, dict) else None)


class Replay:
    """A binary stream giving `prefix` first, then the rest of `stream` (the frame reader's `readline`, `read`)."""

    def __init__(self, prefix: bytes, stream: BinaryIO) -> None:
        self.prefix = prefix
        self.stream = stream

    def readline(self, limit: int = -1) -> bytes:
        if not self.prefix:
            return self.stream.readline(limit)
        end = self.prefix.find(b"\n")
        n = len(self.prefix) if end < 0 else end + 1
        if limit >= 0:
            n = min(n, limit)
        out, self.prefix = self.prefix[:n], self.prefix[n:]
        if out.endswith(b"\n") or self.prefix or (limit >= 0 and len(out) >= limit):
            return out
        return out + self.stream.readline(-1 if limit < 0 else limit - len(out))

    def read(self, n: int = -1) -> bytes:
        if not self.prefix:
            return self.stream.read(n)
        if n < 0:
            out, self.prefix = self.prefix, b""
            return out + self.stream.read()
        out, self.prefix = self.prefix[:n], self.prefix[n:]
        return out + self.stream.read(n - len(out)) if len(out) < n else out
