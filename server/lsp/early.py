"""Answering `initialize` at once, before pygls and lsprotocol are imported (they take most of a second).

pygls's answer to `initialize` depends only on the request (the client's capabilities, workspace, ...) and on
the server's code: the features `server.lsp.server` registers, the pygls and lsprotocol that build the
answer, and the version it reports. The first time a client is served, pygls's answer is kept in the cache
folder (`initialize-v1.json`, 0600) under a digest of all that, the client's `processId` and
`initializationOptions` left out. At the next launch, an `initialize` with the same digest, a well-formed
`processId` and options that parse is answered from there before the server is imported. The request still
goes to pygls, which applies the options and sets the server up as usual; its own answer is then withheld,
and replaces the stored one if they differ. Anything else (another first message, a malformed frame, an
unknown digest) is left to pygls alone: the bytes read are handed over unchanged.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from importlib.util import find_spec
from pathlib import Path
from typing import Any, BinaryIO, cast

from server.lsp.options import InitializationOptions
from storage.cache import cache_dir, load_json_dict, save_json
from storage.errors import InvalidArgument

CACHE_NAME = "initialize-v1.json"
MAX_HEADER_LINE = 8 * 1024
MAX_HEADERS = 32
MAX_EARLY_BODY = 1024 * 1024
"""A first frame larger than this is not read ahead (an `initialize` is a few KiB)."""
KEEP = 8
"""Answers kept (one per editor setup)."""

log = logging.getLogger(__name__)


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


def code_stamp() -> list[Any]:
    """What the answer depends on besides the request: the package version, and where the server's features,
    pygls and lsprotocol live, with their sizes and mtimes."""
    from server.version import version

    out: list[Any] = [version()]
    files = [Path(__file__).with_name("server.py")]
    for name in ("pygls", "lsprotocol"):
        spec = find_spec(name)
        if spec is not None and spec.origin:
            files.append(Path(spec.origin))
    for f in files:
        try:
            st = os.stat(f)
            out.append([str(f), st.st_size, st.st_mtime_ns])
        except OSError:
            out.append([str(f)])
    return out


def digest(params: dict[str, Any]) -> str:
    request = {k: v for k, v in params.items() if k not in ("processId", "initializationOptions")}
    text = json.dumps([code_stamp(), request], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _cache_file() -> Path | None:
    folder = cache_dir()
    return None if folder is None else folder / CACHE_NAME


def _read_first_frame(stream: BinaryIO) -> tuple[bytes, dict[str, Any] | None]:
    """The bytes of the first frame as read, and its message when it is a whole frame holding a JSON object."""
    raw = b""
    length: int | None = None
    for _ in range(MAX_HEADERS + 1):
        line = stream.readline(MAX_HEADER_LINE + 1)
        raw += line
        if not line.endswith(b"\n"):
            return raw, None  # the end of the stream, or an overlong line: for the strict reader to judge
        if not line.strip():
            break
        name, sep, value = line.decode("latin-1").partition(":")
        if sep and name.strip().lower() == "content-length":
            text = value.strip()
            length = int(text) if text.isdigit() else None
    else:
        return raw, None
    if length is None or length > MAX_EARLY_BODY:
        return raw, None
    body = stream.read(length)
    raw += body
    if len(body) < length:
        return raw, None
    try:
        message = json.loads(body)
    except ValueError:
        return raw, None
    return raw, message if isinstance(message, dict) else None


class EarlyInitialize:
    """The first frame of a stdio session: answered at once when pygls answered the same `initialize` before.
    `stream` replays it for the server; `takes` sees pygls's own answer to it."""

    def __init__(self, stream: BinaryIO, request_id: Any, key: str | None, answered: Any) -> None:
        self.stream = stream
        self.request_id = request_id
        self.key = key
        self.answered = answered
        """The result sent early (None: not answered early)."""
        self.done = key is None

    @classmethod
    def start(cls, stdin: BinaryIO, stdout: BinaryIO, defaults: InitializationOptions) -> EarlyInitialize:
        raw, message = _read_first_frame(stdin)
        replay = cast(BinaryIO, Replay(raw, stdin))  # it has what the frame reader calls: readline, read
        params = message.get("params") if message is not None else None
        if (
            message is None
            or message.get("jsonrpc") != "2.0"
            or message.get("method") != "initialize"
            or type(message.get("id")) not in (int, str)
            or not isinstance(params, dict)
        ):
            return cls(replay, None, None, None)
        key = digest(params)
        stored = load_json_dict(_cache_file()).get(key)
        pid = params.get("processId")
        if not isinstance(stored, dict) or "result" not in stored or not (pid is None or type(pid) is int):
            return cls(replay, message["id"], key, None)
        try:
            InitializationOptions.parse(params.get("initializationOptions"), defaults=defaults)
        except InvalidArgument:
            return cls(replay, message["id"], key, None)  # pygls answers with the error
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": stored["result"]}).encode()
        stdout.write(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
        stdout.flush()
        return cls(replay, message["id"], key, stored["result"])

    def takes(self, wire: dict[str, Any]) -> bool:
        """Called with each message pygls sends (as JSON): True to withhold it, the answer already sent. pygls's
        answer is stored for the next launch, or replaces a stored one that differs."""
        if self.done or "method" in wire or wire.get("id") != self.request_id:
            return False
        self.done = True
        early = self.answered is not None
        if "result" in wire and wire["result"] != self.answered:
            if early:
                log.warning("the stored answer to initialize differed from the server's; it is replaced")
            self._store(wire["result"])
        elif "error" in wire and early:
            log.error("initialize was answered early but the server refused it: %s", wire["error"])
            self._store(None)
        return early

    def _store(self, result: Any) -> None:
        path = _cache_file()
        if path is None or self.key is None:
            return
        entries = load_json_dict(path)
        entries.pop(self.key, None)
        if result is not None:
            entries[self.key] = {"result": result}
        save_json(path, dict(list(entries.items())[-KEEP:]))
