"""The first moments of a stdio session: what is answered before pygls and lsprotocol are imported (they take
most of a second).

`initialize`: pygls's answer depends only on the request (the client's capabilities, workspace, ...) and on
the server's code (`server.lsp.codestamp`). The first time a client is served, pygls's answer is kept in the
cache folder (`initialize-v1.json`, 0600) under a digest of both, the client's `processId` and
`initializationOptions` left out. At the next launch, an `initialize` with the same digest, a well-formed
`processId` and options that parse is answered from there before the server is imported; one never answered
before gets the answer pygls gives this server's features (`server.lsp.firstanswer`). The request still
goes to pygls, which applies the options and sets the server up as usual; its own answer is then withheld,
and replaces the stored one if they differ.

Then, while the client sends requests whose answers were kept for the projects folder as it is now
(`server.lsp.answers`: `sessions/list`, `workspace/diagnostic`), they are answered from there too, and never
reach pygls; a `sessions/list` that takes a partial answer, when none was kept, gets the one the server gives
before its first index is complete (`server.features.listing`). The first message of any other kind, an answer
neither kept nor partial, or a pause of `IDLE` seconds ends this: the server is loaded and reads every byte not
answered, in order, from where the early reading stopped.
Anything unexpected (another first message, a malformed frame, an unknown digest) is left to pygls alone.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple, cast

from server.lsp.codestamp import code_stamp
from server.lsp.firstanswer import first_answer
from server.lsp.readahead import Frame, FrameReader, Replay
from server.lsp.writer import answer_frame
from storage.cache import cache_dir, load_json_dict, save_json
from storage.errors import InvalidArgument
from storage.paths import default_projects_dir

if TYPE_CHECKING:
    from server.index.prefill import Prefill
    from server.lsp.options import InitializationOptions

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


class Served(NamedTuple):
    """What the server made of an `initialize`'s options: the projects folder, and whether stores are served."""

    root: str
    stores: bool


def options_digest(launch: list[Any], raw_options: Any) -> str:
    """The options of a launch: the command line's (`launch`) and the client's `initializationOptions`, with the
    environment the folder they serve depends on (the default projects folder, from `$CLAUDE_CONFIG_DIR` else
    `~/.claude`, and the home a `~` stands for): the same options in another environment serve another folder."""
    environment = [str(default_projects_dir()), os.path.expanduser("~")]
    text = json.dumps([launch, raw_options, environment], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class EarlyInitialize:
    """The first frame of a stdio session: answered at once when pygls answered the same `initialize` before.
    `stream` replays it for the server; `takes` sees pygls's own answer to it."""

    def __init__(self, request_id: Any = None, key: str | None = None, options_key: str | None = None) -> None:
        self.stream: BinaryIO | None = None
        """What the server reads: the bytes read ahead and not answered, then the rest of stdin."""
        self.request_id = request_id
        self.key = key
        self.options_key = options_key
        self.answered: Any = None
        """The result sent early (None: not answered early)."""
        self.served: Served | None = None
        """What the options of the `initialize` answered early give."""
        self.done = key is None

    @classmethod
    def start(
        cls, stdin: BinaryIO, stdout: BinaryIO, launch: list[Any], defaults: Callable[[], InitializationOptions]
    ) -> EarlyInitialize:
        """Read the first frame; answer it (and what follows) when it can be. `launch` is the command line's
        choices as JSON (they are part of what options give); `defaults` makes them options, when needed."""
        _end_on_signals()
        reader = FrameReader.of(stdin)
        if reader is None:
            early = cls()
            early.stream = stdin
            return early
        first = reader.take()
        early = cls._initialize(first, stdout, launch, defaults)
        taken = first.raw if first is not None else b""
        if early.served is not None and not early.served.stores:  # store sessions change with their databases
            taken += _answer_kept(reader, stdout, Path(early.served.root))
        early.stream = cast(BinaryIO, Replay(taken + reader.buffer, stdin))  # it has readline and read
        return early

    @classmethod
    def _initialize(
        cls, frame: Frame | None, stdout: BinaryIO, launch: list[Any], defaults: Callable[[], InitializationOptions]
    ) -> EarlyInitialize:
        message = frame.message if frame is not None else None
        params = message.get("params") if message is not None else None
        if (
            message is None
            or message.get("jsonrpc") != "2.0"
            or message.get("method") != "initialize"
            or type(message.get("id")) not in (int, str)
            or not isinstance(params, dict)
        ):
            return cls()
        raw_options = params.get("initializationOptions")
        early = cls(message["id"], digest(params), options_digest(launch, raw_options))
        stored = load_json_dict(_cache_file()).get(early.key or "")
        pid = params.get("processId")
        if not (pid is None or type(pid) is int):
            return early
        if not isinstance(stored, dict) or "result" not in stored:
            first = first_answer(params)  # never answered before: pygls's answer without pygls
            if first is None:
                return early
            stored = {"result": first, "first": True}
        served = _served(stored, early.options_key) or _parsed(raw_options, defaults)
        if served is None:
            return early  # pygls answers with the error
        _send(stdout, message["id"], stored["result"])
        source = "this server's capabilities" if stored.get("first") else "the answer kept at an earlier launch"
        log.info("initialize answered before the server loaded, from %s", source)
        early.answered, early.served = stored["result"], served
        return early

    def takes(self, wire: dict[str, Any], options: InitializationOptions) -> bool:
        """Called with each message pygls sends (as JSON), and the options the server took: True to withhold
        it, the answer already sent. pygls's answer is stored for the next launch (with what the options gave),
        or replaces a stored one that differs."""
        if self.done or "method" in wire or wire.get("id") != self.request_id:
            return False
        self.done = True
        early = self.answered is not None
        if "result" in wire:
            if early and wire["result"] != self.answered:
                log.warning("the stored answer to initialize differed from the server's; it is replaced")
            self._store(wire["result"], Served(str(options.root()), bool(options.stores)))
        elif "error" in wire and early:
            log.error("initialize was answered early but the server refused it: %s", wire["error"])
            self._store(None, None)
        return early

    def _store(self, result: Any, served: Served | None) -> None:
        path = _cache_file()
        if path is None or self.key is None:
            return
        entries = load_json_dict(path)
        entry = entries.pop(self.key, None)
        if result is not None and served is not None and self.options_key is not None:
            same = isinstance(entry, dict) and entry.get("result") == result
            options = entry.get("options") if same and isinstance(entry, dict) else None
            known = {k: v for k, v in options.items() if k != self.options_key} if isinstance(options, dict) else {}
            known[self.options_key] = served._asdict()
            entries[self.key] = {"result": result, "options": dict(list(known.items())[-KEEP:])}
        if entries.get(self.key) != entry:
            save_json(path, dict(list(entries.items())[-KEEP:]))


def _end_on_signals() -> None:
    """Until the server sets its own (`SessionServer._end_on_signals`, which also cancels turns), SIGTERM, SIGINT
    and SIGHUP end the process with status 128 + the signal, as they do later: nothing of ours is running that
    needs an end of its own (the first index's process ends with this one)."""
    if threading.current_thread() is not threading.main_thread():
        return

    def on_signal(signum: int, _frame: object) -> None:
        os._exit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, on_signal)


def _served(stored: dict[str, Any], options_key: str | None) -> Served | None:
    """What these options gave when the server took them before (so they need not be parsed again)."""
    known = stored.get("options")
    found = known.get(options_key) if isinstance(known, dict) and options_key else None
    if isinstance(found, dict) and isinstance(found.get("root"), str) and isinstance(found.get("stores"), bool):
        return Served(found["root"], found["stores"])
    return None


def _parsed(raw_options: Any, defaults: Callable[[], InitializationOptions]) -> Served | None:
    """What options never seen before give, parsed as the server will (None: it will refuse them)."""
    from server.lsp.options import InitializationOptions

    try:
        options = InitializationOptions.parse(raw_options, defaults=defaults())
    except InvalidArgument:
        return None
    return Served(str(options.root()), bool(options.stores))


def _send(stdout: BinaryIO, request_id: Any, result: Any) -> None:
    _send_json(stdout, request_id, json.dumps(result).encode())


def _send_json(stdout: BinaryIO, request_id: Any, result: bytes) -> None:
    """An answer whose result is JSON already."""
    stdout.write(answer_frame(request_id, result))
    stdout.flush()


def _answer_kept(reader: FrameReader, stdout: BinaryIO, root: Path) -> bytes:
    """Answer the requests that follow `initialize` from the answers kept for the folder as it is now, until
    one is not kept (`server.lsp.answers`); the bytes of the frames taken and not answered (`initialized`, and
    the frame that ended this), for the server to read first. The first request with no kept answer starts the
    first index (`server.index.prefill`); a `workspace/diagnostic` with none is held for it
    (`server.lsp.firstreport`)."""
    from server.lsp.answers import answer_key, kept_answer, taken_by_pygls
    from server.lsp.firstreport import POLL, Held, waits
    from storage.folderstamp import stamp_folder

    stamp = stamp_folder(root)  # while the client reads the answer to `initialize` and writes what follows
    taken: list[bytes] = []
    held: Held | None = None
    run: Prefill | None = None
    started = False
    while True:
        if held is not None and held.ready():
            answer = held.answer()
            if answer is None:
                return b"".join(taken)
            del taken[held.at]
            _send_json(stdout, held.request_id, answer)
            log.info("workspace/diagnostic answered before the server loaded, from the first index")
            held = None
        now = time.monotonic()
        if held is not None and (now >= held.deadline or reader.ended):
            return b"".join(taken)  # the server answers it, showing the first index's progress
        frame = reader.take(now + IDLE if held is None else min(now + POLL, held.deadline))
        if frame is None:
            if held is not None and not reader.buffer:
                continue  # silence: look at the first index again
            return b"".join(taken)  # a frame not taken early (too large, malformed, slow to come): pygls reads it
        message = frame.message or {}
        if message.get("method") == "initialized" and "id" not in message:
            taken.append(frame.raw)
            continue
        request_id = message.get("id")
        method, params = str(message.get("method")), message.get("params")
        key = answer_key(method, params, root) if taken_by_pygls(method, params) else None
        if key is None or message.get("jsonrpc") != "2.0" or type(request_id) not in (int, str):
            taken.append(frame.raw)
            if held is not None and waits(frame):
                continue
            return b"".join(taken)
        result = kept_answer(key, stamp) if stamp is not None else None
        if result is None and not started:  # the server will index the folder: from now on, before it loads
            from server.index import prefill

            run, started = prefill.start(root), True
        if result is None and method == "sessions/list":
            result = _partial_list(root, message.get("params"))
        if result is None and held is None and run is not None and method == "workspace/diagnostic":
            held = Held(request_id, run, len(taken))
            taken.append(frame.raw)
            continue
        if result is None:
            taken.append(frame.raw)
            return b"".join(taken)
        _send_json(stdout, request_id, result)


def _partial_list(root: Path, params: Any) -> bytes | None:
    """`sessions/list` of a client that takes partial answers, as the server answers it before its first index is
    complete (`server.features.listing`); None for any other, or parameters the server would refuse."""
    from server.features.listing import check_projects_dir, folder_listing, wants_partial
    from storage.errors import SessionLspError

    params = {} if params is None else params
    try:
        if not isinstance(params, dict) or not wants_partial(params):
            return None
        check_projects_dir(root, params)
        answer = folder_listing(root, params, complete=False, find_uuids=None)
    except SessionLspError:
        return None
    return json.dumps(answer).encode()
