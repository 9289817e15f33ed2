"""Reading LSP frames from a byte stream, strictly.

pygls's own loop skips a frame it cannot read and then waits for a header that never comes: a
client that sent a bad `Content-Length` (too small, too large, negative, not a number, missing)
is left talking to a server that hears nothing more. Here a bad frame raises `FrameError`; the
server logs it and exits non-zero, so the editor restarts it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import queue
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

MAX_HEADER_LINE = 8 * 1024
MAX_HEADERS = 32
MAX_BODY = 1024 * 1024 * 1024

log = logging.getLogger(__name__)


class FrameError(Exception):
    """The byte stream is not a sequence of well-formed LSP frames any more."""


@dataclass
class TooDeep:
    """A message whose JSON nests deeper than the parser reads (about 1,000 levels): its top-level members that
    are not arrays or objects (`id`, `method`), and the names of those that are (one of them too deep)."""

    members: dict[str, Any]
    nested: list[str]


_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[{]+|[\]}]+')
"""A JSON string, a run of opening brackets, a run of closing ones: the tokens that tell nesting."""
_NESTED = "\x00nested"
"""What stands for a nested member (written `"\\u0000nested"`: no member of a message holds it)."""


def too_deep(body: bytes) -> TooDeep | None:
    """What identifies a message nested deeper than the parser reads, read without recursion: every member of the
    top-level object whose value is an array or object stands as a marker; None when the body is not such an
    object even then."""
    depth, last, kept = 0, 0, bytearray()
    for m in _TOKENS.finditer(body):
        first = body[m.start()]
        if first == 0x22:  # a string
            continue
        n = m.end() - m.start()
        if first in b"[{":
            if depth <= 1 < depth + n:  # a member's value opens here
                start = m.start() + 1 - depth
                kept += body[last:start] + rb'"\u0000nested"'
            depth += n
        else:
            if depth > 1 >= depth - n:  # and closes here
                last = m.start() + depth - 1
            depth -= n
    kept += body[last:]
    try:
        members = json.loads(kept)
    except (ValueError, RecursionError):
        return None
    if not isinstance(members, dict):
        return None
    nested = [k for k, v in members.items() if v == _NESTED]
    return TooDeep({k: v for k, v in members.items() if k not in nested}, nested)


class StreamReader:
    """Blocking reads of a binary stream, done on one daemon thread so that a read blocked on a
    client gone quiet never holds up the process's exit."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self._jobs: queue.SimpleQueue[tuple[Callable[[], bytes], asyncio.Future[bytes]]] = queue.SimpleQueue()
        threading.Thread(target=self._work, name="lsp-stdin", daemon=True).start()

    def _work(self) -> None:
        while True:
            fn, fut = self._jobs.get()
            loop = fut.get_loop()
            try:
                data = fn()
            except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine
                loop.call_soon_threadsafe(_settle, fut, None, exc)
            else:
                loop.call_soon_threadsafe(_settle, fut, data, None)

    async def _call(self, fn: Callable[[], bytes]) -> bytes:
        fut: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._jobs.put((fn, fut))
        return await fut

    async def readline(self) -> bytes:
        return await self._call(lambda: self.stream.readline(MAX_HEADER_LINE + 1))

    async def read(self, n: int) -> bytes:
        return await self._call(lambda: self.stream.read(n))


def _settle(fut: asyncio.Future[bytes], data: bytes | None, exc: BaseException | None) -> None:
    if fut.done():
        return
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(data or b"")


async def read_headers(reader: StreamReader) -> dict[str, str] | None:
    """The headers of the next frame (names lower-cased); None at a clean end of stream."""
    headers: dict[str, str] = {}
    while True:
        line = await reader.readline()
        if not line:
            if headers:
                raise FrameError("the stream ended inside a frame's headers")
            return None
        if len(line) > MAX_HEADER_LINE:
            raise FrameError(f"a header line longer than {MAX_HEADER_LINE} bytes")
        if line in (b"\r\n", b"\n"):
            if not headers:
                continue  # stray blank lines between frames are harmless
            return headers
        try:
            text = line.decode("ascii").rstrip("\r\n")
        except UnicodeDecodeError as exc:
            raise FrameError(f"a header line that is not ASCII: {line[:60]!r}") from exc
        name, sep, value = text.partition(":")
        if not sep or not name.strip():
            raise FrameError(f"a malformed header line: {line[:60]!r}")
        headers[name.strip().lower()] = value.strip()
        if len(headers) > MAX_HEADERS:
            raise FrameError("too many header lines")


def content_length(headers: dict[str, str]) -> int:
    raw = headers.get("content-length")
    if raw is None:
        raise FrameError("a frame without Content-Length")
    if not raw.isascii() or not raw.isdigit():
        raise FrameError(f"Content-Length is not a non-negative number: {raw!r}")
    n = int(raw)
    if n > MAX_BODY:
        raise FrameError(f"Content-Length {n} is larger than the limit of {MAX_BODY} bytes")
    return n


async def serve_frames(
    reader: StreamReader,
    structure: Callable[[dict[str, Any]], Any],
    handle: Callable[[Any], None],
    stop: threading.Event,
) -> None:
    """Read frames until the stream ends or `stop` is set; raise FrameError on a bad one."""
    while not stop.is_set():
        headers = await read_headers(reader)
        if headers is None:
            return
        n = content_length(headers)
        body = await reader.read(n) if n else b""
        if len(body) < n:
            raise FrameError(f"the stream ended after {len(body)} of {n} body bytes")
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise FrameError(f"a body that is not JSON ({exc}); was its Content-Length ({n}) right?") from exc
        except RecursionError:  # a whole frame, only nested deeper than the parser goes: the next one is intact
            deep = too_deep(body)
            if deep is None:
                log.error("ignoring a message nested too deeply to read: %.80r", body)
            else:
                handle(deep)  # a request is answered: its id is known
            continue
        if not isinstance(data, dict):
            log.error("ignoring a message that is not a JSON object: %.80r", body)
            continue
        try:
            handle(structure(data))
        except Exception:  # noqa: BLE001 - one message's failure must not end the server
            log.exception("unable to handle a message")
