"""The first moments of a stdio session: what is answered before pygls and lsprotocol are imported (they take
most of a second).

`initialize`: pygls's answer depends only on the request (the client's capabilities, workspace, ...) and on
the server's code (`server.lsp.codestamp`). The first time a client is served, pygls's answer is kept in the
cache folder (`initialize-v1.json`, 0600) under a digest of both, the client's `processId` and
`initializationOptions` left out. At the next launch, an `initialize` with the same digest, a well-formed
`processId` and options that parse is answered from there before the server is imported. The request still
goes to pygls, which applies the options and sets the server up as usual; its own answer is then withheld,
and replaces the stored one if they differ.

Then, while the client sends requests whose answers were kept for the projects folder as it is now
(`server.lsp.answers`: `sessions/list`, `workspace/diagnostic`), they are answered from there too, and never
reach pygls. The first message of any other kind, an answer not kept, or a pause of `IDLE` seconds ends this:
the server is loaded and reads every byte not answered, in order, from where the early reading stopped.
Anything unexpected (another first message, a malformed frame, an unknown digest) is left to pygls alone.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from pathlib import Path
from typing import Any, BinaryIO, cast

from server.lsp.codestamp import code_stamp
from server.lsp.options import InitializationOptions
from server.lsp.readahead import Frame, FrameReader, Replay
from storage.cache import cache_dir, load_json_dict, save_json
from storage.errors import InvalidArgument

CACHE_NAME = "initialize-v1.json"
KEEP = 8
"""Answers to `initialize` kept (one per editor setup)."""
IDLE = 0.1
"""Seconds without a message after which the server is loaded anyway."""

log = logging.getLogger(__name__)


def digest(params: dict[str, Any]) -> str:
    request = {k: v for k, v in params.items() if k not in ("processId", "initializationOptions")}
    text = json.dumps([code_stamp(), request], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _cache_file() -> Path | None:
    folder = cache_dir()
    return None if folder is None else folder / CACHE_NAME


class EarlyInitialize:
    """The first frame of a stdio session: answered at once when pygls answered the same `initialize` before.
    `stream` replays it for the server; `takes` sees pygls's own answer to it."""

    def __init__(self, stream: BinaryIO | None, request_id: Any, key: str | None, answered: Any) -> None:
        self.stream = stream
        """What the server reads: the bytes read ahead and not answered, then the rest of stdin."""
        self.options: InitializationOptions | None = None
        """The options of the `initialize` answered early."""
        self.request_id = request_id
        self.key = key
        self.answered = answered
        """The result sent early (None: not answered early)."""
        self.done = key is None

    @classmethod
    def start(cls, stdin: BinaryIO, stdout: BinaryIO, defaults: InitializationOptions) -> EarlyInitialize:
        reader = FrameReader.of(stdin)
        if reader is None:
            return cls(stdin, None, None, None)
        first = reader.take()
        early = cls._initialize(first, stdout, defaults)
        taken = first.raw if first is not None else b""
        if early.answered is not None:
            taken += _answer_kept(reader, stdout, early.options or defaults)
        early.stream = cast(BinaryIO, Replay(taken + reader.buffer, stdin))  # it has readline and read
        return early

    @classmethod
    def _initialize(cls, frame: Frame | None, stdout: BinaryIO, defaults: InitializationOptions) -> EarlyInitialize:
        message = frame.message if frame is not None else None
        params = message.get("params") if message is not None else None
        if (
            message is None
            or message.get("jsonrpc") != "2.0"
            or message.get("method") != "initialize"
            or type(message.get("id")) not in (int, str)
            or not isinstance(params, dict)
        ):
            return cls(None, None, None, None)
        key = digest(params)
        stored = load_json_dict(_cache_file()).get(key)
        pid = params.get("processId")
        if not isinstance(stored, dict) or "result" not in stored or not (pid is None or type(pid) is int):
            return cls(None, message["id"], key, None)
        try:
            options = InitializationOptions.parse(params.get("initializationOptions"), defaults=defaults)
        except InvalidArgument:
            return cls(None, message["id"], key, None)  # pygls answers with the error
        _send(stdout, message["id"], stored["result"])
        early = cls(None, message["id"], key, stored["result"])
        early.options = options
        return early

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


def _send(stdout: BinaryIO, request_id: Any, result: Any) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()
    stdout.write(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
    stdout.flush()


def _answer_kept(reader: FrameReader, stdout: BinaryIO, options: InitializationOptions) -> bytes:
    """Answer the requests that follow `initialize` from the answers kept for the folder as it is now, until
    one is not kept (`server.lsp.answers`); the bytes of the frames taken and not answered (`initialized`, and
    the frame that ended this), for the server to read first."""
    if options.stores:
        return b""  # store sessions change with their databases, not with the folder
    from server.lsp.answers import answer_key, kept_answer
    from storage.folderstamp import stamp_folder

    root = options.root()
    stamp = None
    taken = b""
    while True:
        frame = reader.take(time.monotonic() + IDLE)
        if frame is None:
            return taken
        message = frame.message or {}
        if message.get("method") == "initialized" and "id" not in message:
            taken += frame.raw
            continue
        request_id = message.get("id")
        key = answer_key(str(message.get("method")), message.get("params"), root)
        if key is None or message.get("jsonrpc") != "2.0" or type(request_id) not in (int, str):
            return taken + frame.raw
        stamp = stamp or stamp_folder(root)
        result = kept_answer(key, stamp) if stamp is not None else None
        if result is None:
            return taken + frame.raw
        _send(stdout, request_id, result)
