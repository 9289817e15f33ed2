"""session-lsp's language server: every LSP handler, named after the method it serves.

The handlers translate between LSP and the plain features in `server.features`; the index of the
projects folder (`server.index`) is the single source of rows and diagnostics.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import inspect
import json
import logging
import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import cattrs
from lsprotocol import types as lsp
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcServerNotInitialized,
)
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import from_fs_path, to_fs_path

from server.agent.cancel import CancelToken, TurnCancelled
from server.agent.permissions import ASK_TIMEOUT, Decision, PermissionAsk, SessionGrants, parse_decision
from server.agent.pool import TurnPool
from server.features import navigation
from server.features.diagnosticreport import diagnostic_json, document_report, workspace_report_json
from server.features.hover import hover_markdown
from server.features.outline import Item, lenses, row_at_line, turns
from server.features.requests import SessionRequests
from server.features.symbols import workspace_symbols
from server.features.tree import TreeView
from server.index import ProjectIndex, prefill
from server.index.storefeed import StoreFeed
from server.index.storeset import StoreSet
from server.lsp.answers import answer_key, keep_computed
from server.lsp.early import EarlyInitialize
from server.lsp.errors import to_jsonrpc
from server.lsp.framing import FrameError, StreamReader, TooDeep, serve_frames
from server.lsp.giveway import GiveWay
from server.lsp.options import InitializationOptions
from server.lsp.parentwatch import watch_parent
from server.lsp.writer import FrameWriter, JsonText, answer_frame
from server.params import str_param
from server.version import version
from storage.access import resolve_target
from storage.errors import InvalidArgument, SessionLspError
from storage.fileopen import open_regular
from storage.folderstamp import FolderStamp, stamp_folder
from storage.indexdb import FILLS
from storage.jsonline import dumps_any_depth
from storage.paths import default_projects_dir, stays_inside
from storage.search import SearchIndex

log = logging.getLogger(__name__)
STORE_WAIT = 30.0
"""Seconds the first index waits for the stores' first read (a store that does not answer gives up sooner)."""
PROGRESS_WAIT = 5.0
"""Seconds the first index waits for the client to agree to show its progress (it goes on without)."""
EXIT_GRACE = 1.5
"""Seconds that running turns get to record their interruption at `exit` before the process ends."""
CANCEL_GRACE = 1.5
"""Seconds a cancelled `runTurn` waits for its turn to record the interruption before answering."""
CUSTOM_REQUESTS = (
    "sessions/list",
    "sessions/tree",
    "sessions/chain",
    "sessions/resume",
    "sessions/fork",
    "sessions/runTurn",
    "sessions/storeDocument",
)


def to_plain(value: Any) -> Any:
    """pygls hands unknown params over as namedtuples: turn them back into dicts and lists."""
    if hasattr(value, "_asdict"):
        return {k: to_plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    return value


@dataclass
class _Undecodable:
    """A request whose parameters do not fit its method's schema."""

    msg_id: Any
    method: str
    problem: str
    jsonrpc: str = "2.0"


@dataclass
class _Malformed:
    """A request that is not a JSON-RPC 2.0 request (wrong `jsonrpc`, a `method` that is not a string)."""

    msg_id: Any
    problem: str
    jsonrpc: str = "2.0"


def _is_request(data: dict[str, Any]) -> bool:
    """A message with an answer owed: not a notification (no id) nor a response."""
    return "id" in data and "result" not in data and "error" not in data


def _malformed(data: dict[str, Any]) -> _Malformed | None:
    if not _is_request(data):
        return None  # a notification or a response: nothing to answer
    msg_id = data["id"] if isinstance(data["id"], (str, int)) and not isinstance(data["id"], bool) else None
    if data.get("jsonrpc") != "2.0":
        return _Malformed(msg_id, f"'jsonrpc' must be \"2.0\", not {data.get('jsonrpc')!r}")
    if not isinstance(data.get("method"), str):
        return _Malformed(msg_id, "'method' must be a string")
    return None


def _result_json(result: dict[str, Any], default: Callable[[Any], Any]) -> bytes:
    """A plain result as pygls writes it (`json.dumps`); one nested past the recursion limit of that encoder (and of
    cattrs, which pygls runs over the whole message first: a chain holding a tool input of 1,000 levels) as compact
    JSON of any depth (`storage.jsonline.dumps_any_depth`). pygls logged such a failure and never answered, so the
    client waited for good."""
    try:
        return json.dumps(result, default=default).encode()
    except RecursionError:
        return dumps_any_depth(result)


class SessionProtocol(LanguageServerProtocol):
    """pygls drops a request whose params fail to decode, or that is not JSON-RPC 2.0, without
    answering; we answer them (InvalidParams naming the field, InvalidRequest) so the client is never
    left waiting.
    As LSP requires, requests before `initialize` get ServerNotInitialized, a second `initialize`
    is refused, and requests after `shutdown` get InvalidRequest."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._initialize_received = False
        self.early: EarlyInitialize | None = None
        """`initialize` as answered before the server loaded (`serve` over stdio), if it was."""

    def _send_data(self, data: Any) -> None:
        early = self.early
        if early is not None and not early.done and data:
            if early.takes(json.loads(json.dumps(data, default=self._serialize_message)), self.served_options()):
                return  # the client has this answer already
        super()._send_data(data)

    def _send_response(self, msg_id: Any, result: Any | None = None, error: Any | None = None) -> None:
        if error is None and isinstance(result, dict):
            result = JsonText(_result_json(result, self._serialize_message))
        if error is None and isinstance(result, JsonText):  # JSON already: written as it is
            self._result_types.pop(msg_id, None)
            self._write_frame(answer_frame(msg_id, result))
            return
        super()._send_response(msg_id, result, error)

    def _write_frame(self, frame: bytes) -> None:
        """One whole frame to the client, as pygls writes its own (a failure reported as pygls reports it)."""
        if self.writer is None:
            log.error("no transport to answer on")
            return
        try:
            written = self.writer.write(frame)
            if inspect.isawaitable(written):
                asyncio.ensure_future(written)
        except BrokenPipeError:
            log.exception("the client's end of the connection is gone")
            raise
        except Exception as error:
            log.exception("sending an answer failed")
            self._server._report_server_error(error, JsonRpcInternalError)

    def served_options(self) -> InitializationOptions:
        server = self._server
        return server.options if isinstance(server, SessionServer) else InitializationOptions()

    def structure_message(self, data: dict[str, Any]) -> Any:
        bad = _malformed(data)
        if bad is not None:
            return bad
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if "id" in data and "method" in data:
                return _Undecodable(data["id"], str(data["method"]), _field_problem(exc))
            return None

    def _refuse(self, msg_id: Any, error: JsonRpcException) -> None:
        self._send_response(msg_id, None, error.to_response_error())

    def _refuse_deep(self, message: TooDeep) -> None:
        """A request nested deeper than the parser reads is answered (InvalidParams naming its nested members);
        anything else of the kind is only logged (a notification has no answer)."""
        data = message.members
        if not _is_request(data) or _malformed(data) is not None:
            log.error("ignoring a message nested too deeply to read (members %s)", sorted(data) + message.nested)
            return
        names = ", ".join(repr(n) for n in message.nested)
        self._refuse(
            data["id"],
            JsonRpcInvalidParams(message=f"invalid parameters for {data['method']}: {names} nested too deeply to read"),
        )

    def handle_message(self, message: Any) -> None:
        if message is None:
            return
        if isinstance(message, _Malformed):
            self._refuse(
                message.msg_id, JsonRpcInvalidRequest(message=f"not a JSON-RPC 2.0 request: {message.problem}")
            )
            return
        if isinstance(message, TooDeep):
            self._refuse_deep(message)
            return
        if isinstance(message, _Undecodable):
            self._refuse(
                message.msg_id,
                JsonRpcInvalidParams(message=f"invalid parameters for {message.method}: {message.problem}"),
            )
            return
        method = getattr(message, "method", None)
        is_request = method is not None and getattr(message, "id", None) is not None
        if method == lsp.INITIALIZE:
            if self._initialize_received:
                self._refuse(message.id, JsonRpcInvalidRequest(message="initialize may only be sent once"))
                return
            self._initialize_received = True
        elif not self._initialize_received and method not in (None, lsp.EXIT):
            if is_request:
                self._refuse(message.id, JsonRpcServerNotInitialized(message=f"{method} before initialize"))
            return  # notifications before initialize are dropped, as LSP says
        if self._shutdown and method not in (None, lsp.EXIT) and getattr(message, "id", None) is not None:
            refusal = JsonRpcInvalidRequest(message=f"the server is shutting down; {method} is not served")
            self._send_response(message.id, None, refusal.to_response_error())
            return
        super().handle_message(message)


def _field_problem(exc: BaseException) -> str:
    """What cattrs found wrong, with the field's path (`... @ $.params.position.line`)."""
    cause = exc.__cause__
    if isinstance(cause, cattrs.BaseValidationError):
        return "; ".join(cattrs.transform_error(cause)).replace("$.params.", "")
    return str(cause or exc) or "they do not fit the method's schema"


class SessionServer(LanguageServer):
    def __init__(self) -> None:
        # transcripts are read from disk: documents sync on open and close only, never per edit
        super().__init__(
            "session-lsp",
            version(),
            text_document_sync_kind=lsp.TextDocumentSyncKind.None_,
            protocol_cls=SessionProtocol,
        )
        self.defaults = InitializationOptions()
        """What the command line chose (`serve --projects-dir/--polling`); the client's options override."""
        self.options = InitializationOptions()
        self.projects_dir: Path = default_projects_dir()
        self.index: ProjectIndex | None = None
        self.requests: SessionRequests | None = None
        self.watcher: Any = None
        self.ready = threading.Event()
        self.give_way = GiveWay()
        """Partial `sessions/list` answers being computed: the first index waits for them between files."""
        self.turns = TurnPool()
        self.turn_progress: dict[str | int, CancelToken] = {}
        """By the work-done token a `runTurn` reports progress on, its turn's cancel: the progress's cancel button
        (`window/workDoneProgress/cancel`) stops the turn as `$/cancelRequest` does."""
        self.search: SearchIndex | None = None
        """The full-text search database, opened on first use (`search_index`)."""
        self.search_lock = threading.Lock()
        self.search_changed: set[Path] | None = None
        """Files the index saw change since the search database last caught up; None: look at every
        file on the next search (the first one, without a watcher, or after the folder came back)."""
        self.grants = SessionGrants()
        """Tools the person allowed for the rest of a session (`sessions/permission` answers)."""
        self.stores = StoreSet(())
        """The session stores mirrored read-only beside the projects folder (`stores` option)."""
        self.kept: dict[str, int] = {}
        """By answer key, the index generation its answer was last kept at (`server.lsp.answers`)."""
        self.generation = 0
        """How many changes the index has reported: an answer kept since the last one needs no keeping again."""
        self._wanted: dict[str, tuple[str, Any, Callable[[], tuple[Any, bool]]]] = {}
        """Requests answered before the first index was complete, by answer key: kept once it is."""
        self._views: dict[Path, tuple[int, TreeView]] = {}
        self._lock = threading.RLock()
        self._ending = threading.Lock()

    # -- process -----------------------------------------------------------------------------
    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """Serve stdio with strict framing; a bad frame ends the process with status 1."""
        self._stop_event = threading.Event()
        self.protocol.set_writer(FrameWriter(stdout or sys.stdout.buffer))
        reader = StreamReader(stdin or sys.stdin.buffer)
        self._end_on_signals()
        code = 0
        try:
            asyncio.run(
                serve_frames(reader, self.protocol.structure_message, self.protocol.handle_message, self._stop_event)
            )
        except FrameError as exc:
            log.error("bad frame from the client: %s; exiting so the editor restarts the server", exc)
            print(f"session-lsp: bad frame from the client: {exc}", file=sys.stderr)
            code = 1
        except SystemExit as exc:  # the `exit` notification
            code = exc.code if isinstance(exc.code, int) else 0
        except BrokenPipeError:
            log.error("the client is gone")
            code = 1
        self.terminate(code)

    def _end_on_signals(self) -> None:
        """SIGTERM (an editor stopping its server), SIGINT (Ctrl-C) and SIGHUP (its terminal closed) end the
        process as `exit` does, with status 128 + the signal: running turns are cancelled, so the commands their
        tools started are killed and the interruption is recorded, rather than left running."""
        if threading.current_thread() is not threading.main_thread():
            return

        def on_signal(signum: int, _frame: object) -> None:
            threading.Thread(target=self.terminate, args=(128 + signum,), name="signal-exit", daemon=True).start()

        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, on_signal)

    def terminate(self, code: int) -> None:
        """Stop everything and end the process: turns are cancelled and get EXIT_GRACE seconds to
        record their interruption, the watcher stops, and nothing else is waited for."""
        with self._ending:
            self.turns.cancel_all()
            if self.watcher is not None:
                try:
                    self.watcher.stop()
                except RuntimeError:
                    log.debug("watcher stop during start-up", exc_info=True)
            self.stores.stop()
            self.turns.wait_idle(EXIT_GRACE)
            from storage.writequeue import flush_all

            flush_all()
            logging.shutdown()
            os._exit(code)

    # -- state -------------------------------------------------------------------------------
    def configure(self, projects_dir: Path) -> None:
        self.projects_dir = projects_dir.expanduser()
        self.index = ProjectIndex(self.projects_dir)
        self.stores = StoreSet(self.options.stores, self.on_index_change)
        self.requests = SessionRequests(
            self.projects_dir,
            self.transcript_of,
            self.index.homes_many,
            stores=self.stores.feeds,
            indexed=self.ready.is_set,
        )

    def answer_and_keep(self, method: str, params: Any, compute: Callable[[], tuple[Any, bool]]) -> Any:
        """`compute()` gives an answer and whether it is whole (not cut short by a cancel). A whole answer to
        a request of `server.lsp.answers.KEPT`, computed from the complete index while the folder stayed as the
        index has it, is kept for the next launch to give before the server loads (`server.lsp.early`)."""
        index = self.index
        key = None
        if index is not None and index.persist_enabled and not self.options.stores:
            key = answer_key(method, params, index.projects_dir)
        if key is not None and not self.ready.is_set():
            with self._lock:
                self._wanted[key] = (method, params, compute)  # kept once the first index is complete
            key = None
        generation = self.generation
        if key is not None and self.kept.get(key) == generation:
            key = None  # kept since the index last changed (a change it did not see changes the stamp: not replayed)
        before = stamp_folder(index.projects_dir) if key is not None and index is not None else None
        result, whole = compute()
        if index is None or key is None or before is None or not whole:
            return result
        # kept once the answer is on its way: checking and writing it took 0.045 s of a 0.8 s launch
        threading.Thread(target=self._keep, args=(key, before, generation, result), name="keep", daemon=True).start()
        return result

    def _keep(self, key: str, before: FolderStamp, generation: int, result: Any) -> None:
        """Keep `result` when the index still holds the folder as `before` saw it and the folder has not changed
        since (a change meanwhile only means it is not kept)."""
        index = self.index
        try:
            if index is None:
                return
            wire = result if isinstance(result, JsonText) else self._wire(result)
            if keep_computed(key, before, index, wire):
                self.kept[key] = generation
        except Exception:  # an answer not kept is computed again at the next launch
            log.warning("keeping the answer to %s failed", key, exc_info=True)

    def _wire(self, result: Any) -> bytes:
        """A result as pygls would send it."""
        return json.dumps(result, default=self.protocol._serialize_message).encode()

    def keep_wanted(self) -> None:
        """Compute again, and keep, the answers asked for before the first index was complete."""
        with self._lock:
            wanted, self._wanted = self._wanted, {}
        for method, params, compute in wanted.values():
            try:
                self.answer_and_keep(method, params, compute)
            except Exception:  # a request that fails now is simply not kept
                log.debug("not keeping the answer to %s", method, exc_info=True)

    def index_for(self, path: Path) -> ProjectIndex | None:
        """The index of the projects folder or of the store mirror holding `path`; None for others."""
        feed = self.stores.feed_of(path)
        if feed is not None:
            return feed.index
        return self.index if self.under_projects(path) else None

    def uri_of(self, path: Path) -> str:
        """A file's URI for the editor: `session-store:` for a store's mirror, else `file:`."""
        return self.stores.uri_of(path) or from_fs_path(str(path)) or ""

    def path_of(self, uri: str) -> Path:
        return self.stores.path_of(uri) or Path(to_fs_path(uri) or uri)

    def state_of(self, path: Path) -> Any:
        index = self.index_for(path)
        if index is None:
            return None
        fs = index.files.get(path)
        if fs is None and path.suffix == ".jsonl" and path.is_file():
            index.update_file(path)
            fs = index.files.get(path)
        return fs

    def search_index(self) -> SearchIndex:
        if self.search is None:
            self.search = SearchIndex.open()
        return self.search

    def search_catch_up(self, stop: threading.Event | None = None) -> SearchIndex:
        """The search database, caught up with the folder: with a watcher, only the files it saw
        change since the last search (every file the first time); without one, every file. Once `stop` is set
        (the search was cancelled), `CatchUpStopped` at the next file."""
        search = self.search_index()
        with self._lock:
            changed, self.search_changed = self.search_changed, set() if self.watcher is not None else None
        try:
            if changed is None:
                search.update(self.projects_dir, stop)
            else:
                search.update_paths(self.projects_dir, changed, stop)
        except BaseException:
            with self._lock:
                self.search_changed = None  # what was not read is looked at again next time
            raise
        return search

    def under_projects(self, path: Path) -> bool:
        return stays_inside(self.projects_dir, path)

    def transcript_of(self, path: Path) -> Any:
        from storage.transcript import Transcript

        fs = self.state_of(path)
        return fs.transcript if fs is not None else Transcript.load(path)

    def view_of(self, path: Path) -> TreeView | None:
        fs = self.state_of(path)
        if fs is None:
            return None
        with self._lock:
            cached = self._views.get(path)
        if cached is not None and cached[0] == fs.offset and cached[1].covers(fs.transcript):
            return cached[1]
        # built outside the lock: a small file's view is not held up by a big one's (a grown view leaves the one
        # it grew from unchanged, so two threads growing the same view each get a whole one)
        view = cached[1].grown(fs.transcript) if cached is not None else TreeView.of(fs.transcript)
        with self._lock:
            now = self._views.get(path)
            if now is None or now[0] <= fs.offset:
                self._views[path] = (fs.offset, view)
        return view

    def diagnostics_json(self, path: Path) -> list[dict[str, Any]]:
        """A file's diagnostics as LSP JSON (none for a file of no index)."""
        index = self.index_for(path)
        if index is None:
            return []
        return [diagnostic_json(d, self.uri_of) for d in index.diagnostics(path)]

    def publish(self, paths: set[Path]) -> None:
        open_docs = {self.path_of(uri): uri for uri in self.workspace.text_documents}
        for path in paths:
            uri = open_docs.get(path)
            if uri is not None:
                wire = {"uri": uri, "diagnostics": self.diagnostics_json(path)}
                self.text_document_publish_diagnostics(
                    self.protocol._converter.structure(wire, lsp.PublishDiagnosticsParams)
                )

    def watch_fallback(self, reason: str) -> None:
        """The watcher polls because of a limit: tell the person once, with what to change for that limit."""
        from server.index.watchcover import limit_advice

        message = (
            f"session-lsp: {reason}; the projects folder is polled every second instead, which costs more. "
            f"{limit_advice(reason)}"
        )
        self.protocol.notify("window/showMessage", lsp.ShowMessageParams(type=lsp.MessageType.Warning, message=message))

    def on_index_change(self, change: Any) -> None:
        with self._lock:
            self.generation += 1
            for p in change.removed:  # a changed file's view is grown or rebuilt when next asked for
                self._views.pop(p, None)
            if change.root:
                self.search_changed = None
            elif self.search_changed is not None:
                self.search_changed |= set(change.changed) | set(change.removed)
        self.publish(set(change.changed) | set(change.diagnostics))
        for p in change.removed:
            uri = self.uri_of(p)
            if uri in self.workspace.text_documents:
                self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        if change.session_ids or change.removed:
            self.protocol.notify(
                "sessions/didChange",
                {"sessionIds": sorted(change.session_ids), "removed": sorted(str(p) for p in change.removed)},
            )


def _line_range(line: int, start: int = 0, end: int | None = None) -> lsp.Range:
    return lsp.Range(
        start=lsp.Position(line=line, character=start),
        end=lsp.Position(line=line, character=end if end is not None else 10**6),
    )


server = SessionServer()


def _file_of(uri: str) -> Path | None:
    """The file a document URI names; None for one no file can have (a NUL, `%00`)."""
    path = server.path_of(uri)
    return None if "\x00" in str(path) else path


def _path(uri: str) -> Path:
    """The file a request's `textDocument.uri` names; InvalidParams for one no file can have (`_file_of`)."""
    path = _file_of(uri)
    if path is None:
        raise JsonRpcInvalidParams(message="parameter 'textDocument.uri' names a path with a NUL character")
    return path


def _object_params(params: Any) -> dict[str, Any]:
    """The request's parameters as a dict (one object, or a list holding one); else InvalidParams."""
    plain = to_plain(params)
    if isinstance(plain, list) and len(plain) == 1:
        plain = plain[0]
    if plain is None:
        plain = {}
    if not isinstance(plain, dict):
        raise JsonRpcInvalidParams(message="parameters must be an object")
    return plain


async def _until_ready(ls: SessionServer, timeout: float = 60) -> None:
    """Wait for the first index without blocking the event loop (other requests go on)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not ls.ready.is_set() and loop.time() < deadline:
        await asyncio.sleep(0.02)


# -- lifecycle -------------------------------------------------------------------------------
@server.feature(lsp.INITIALIZE)
def initialize(ls: SessionServer, params: lsp.InitializeParams) -> None:
    try:
        ls.options = InitializationOptions.parse(to_plain(params.initialization_options), defaults=ls.defaults)
    except InvalidArgument as exc:
        raise to_jsonrpc(exc) from exc
    ls.configure(ls.options.root())
    # the editor gone (its pipe to us perhaps still held by another process): end as `exit` without `shutdown` does
    watch_parent(params.process_id, lambda: ls.terminate(1))


@server.feature(lsp.INITIALIZED)
def initialized(ls: SessionServer, params: lsp.InitializedParams) -> None:
    threading.Thread(target=_initial_scan, args=(ls,), name="initial-scan", daemon=True).start()


def _progress_created(ls: SessionServer, token: str) -> bool:
    """Ask the client to show a progress of ours, when it says it can (`window.workDoneProgress`; LSP 3.15): True
    once it agreed. Asked without pygls's callback, which raised into the log when the request was still
    unanswered at exit (a client that never answers it)."""
    window = ls.client_capabilities.window
    if window is None or not window.work_done_progress:
        return False
    try:
        ls.protocol.send_request(
            lsp.WINDOW_WORK_DONE_PROGRESS_CREATE, lsp.WorkDoneProgressCreateParams(token=token)
        ).result(timeout=PROGRESS_WAIT)
    except Exception:  # refused, or not answered in time
        return False
    return True


def _initial_scan(ls: SessionServer) -> None:
    assert ls.index is not None
    gate = contextlib.ExitStack()
    if ls.index.persist_enabled:  # a listing asked meanwhile waits for the first index, which stores every
        gate.enter_context(FILLS.running())  # summary and usage total, instead of reading every file beside it
    token = "session-lsp/indexing"
    have_progress = _progress_created(ls, token)
    if have_progress:
        ls.work_done_progress.begin(token, lsp.WorkDoneProgressBegin(title="Indexing Claude sessions", percentage=0))

    def report(done: int, total: int, read_bytes: tuple[int, int]) -> None:
        read, size = read_bytes
        share = read / size if size else done / total
        message = f"{done}/{total} files, {read / 2**20:.1f}/{size / 2**20:.1f} MiB"
        ls.work_done_progress.report(token, lsp.WorkDoneProgressReport(message=message, percentage=int(100 * share)))

    def progress(done: int, total: int) -> None:
        ls.give_way.wait()
        if have_progress and total and (done % 50 == 0 or done == total):
            report(done, total, ls.index.scan_bytes if ls.index is not None else (0, 0))

    def early_progress(done: int, total: int, read_bytes: tuple[int, int]) -> None:
        if have_progress and total:
            report(done, total, read_bytes)

    try:
        with gate:
            prefill.wait(ls.projects_dir, early_progress)  # what was read before the server loaded is stored
            if ls.options.watch:  # also when the folder is missing: the watcher waits for it
                from server.index.watcher import IndexWatcher

                watcher = IndexWatcher(
                    ls.index, ls.on_index_change, polling=ls.options.polling, on_fallback=ls.watch_fallback
                )
                watcher.start(scan=True, progress=progress)  # observes first, then scans
                ls.watcher = watcher
            elif ls.projects_dir.is_dir():
                ls.index.scan(progress)
        ls.stores.start()
        ls.stores.wait_ready(STORE_WAIT)
    finally:
        ls.ready.set()
        if have_progress:
            ls.work_done_progress.end(token, lsp.WorkDoneProgressEnd(message="Indexed"))
    ls.publish({_path(uri) for uri in ls.workspace.text_documents})
    ls.protocol.notify("sessions/didChange", {"sessionIds": [], "removed": []})
    ls.keep_wanted()


@server.feature(lsp.SHUTDOWN)
def shutdown(ls: SessionServer, params: Any) -> None:
    ls.turns.cancel_all()
    if ls.watcher is not None:
        try:
            ls.watcher.stop()
        except RuntimeError:  # stopped before it was fully started
            log.debug("watcher stop during start-up", exc_info=True)
    ls.stores.stop()


@server.feature(lsp.EXIT)
def exit_(ls: SessionServer, params: Any) -> None:
    """End the process within EXIT_GRACE seconds whatever is running (status 0 after `shutdown`)."""
    code = 0 if ls.protocol._shutdown else 1
    threading.Thread(target=ls.terminate, args=(code,), name="exit", daemon=True).start()


# -- documents -------------------------------------------------------------------------------
@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
def text_document_did_open(ls: SessionServer, params: lsp.DidOpenTextDocumentParams) -> None:
    """The opened session's diagnostics are computed and pushed from a thread of their own."""
    path = _file_of(params.text_document.uri)
    if path is None:  # no file: nothing to publish (a notification has no answer to refuse it in)
        return
    threading.Thread(target=_publish_opened, args=(ls, path), name="did-open", daemon=True).start()


def _publish_opened(ls: SessionServer, path: Path) -> None:
    if ls.ready.is_set() and ls.state_of(path) is not None:
        ls.publish({path})


@server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
def text_document_did_save(ls: SessionServer, params: lsp.DidSaveTextDocumentParams) -> None:
    path = _file_of(params.text_document.uri)
    if ls.index is not None and path is not None and ls.under_projects(path):
        ls.on_index_change(ls.index.update_file(path))


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
def text_document_did_close(ls: SessionServer, params: lsp.DidCloseTextDocumentParams) -> None:
    return None


@server.feature(
    lsp.TEXT_DOCUMENT_DIAGNOSTIC,
    lsp.DiagnosticOptions(identifier="session-lsp", inter_file_dependencies=True, workspace_diagnostics=True),
)
async def text_document_diagnostic(ls: SessionServer, params: lsp.DocumentDiagnosticParams) -> Any:
    await _until_ready(ls)
    path = _path(params.text_document.uri)
    items = await asyncio.to_thread(lambda: ls.diagnostics_json(path) if ls.state_of(path) is not None else [])
    return JsonText(json.dumps(document_report(items)).encode())


@server.feature(lsp.WORKSPACE_DIAGNOSTIC)
async def workspace_diagnostic(ls: SessionServer, params: lsp.WorkspaceDiagnosticParams) -> Any:
    """Computed on a worker thread, so the event loop goes on serving other requests (and
    `$/cancelRequest`, which stops the computation at the next session)."""
    await _until_ready(ls)
    stop = threading.Event()

    def compute() -> tuple[JsonText, bool]:
        assert ls.index is not None
        indexes = [ls.index, *(feed.index for feed in ls.stores.feeds)]
        return JsonText(workspace_report_json(indexes, ls.uri_of, stop)), not stop.is_set()

    try:
        # every report is whole whatever the parameters (`answers.IGNORED_PARAMS`: all of them)
        return await asyncio.to_thread(ls.answer_and_keep, lsp.WORKSPACE_DIAGNOSTIC, {}, compute)
    except asyncio.CancelledError:
        stop.set()
        raise


@server.feature(lsp.TEXT_DOCUMENT_HOVER)
@server.thread()  # the first hover of a file builds its tree view
def text_document_hover(ls: SessionServer, params: lsp.HoverParams) -> lsp.Hover | None:
    path = _path(params.text_document.uri)
    view = ls.view_of(path)
    if view is None:
        return None
    row = row_at_line(view, params.position.line)
    if row is None:
        return None
    text = hover_markdown(path, view, row)
    return lsp.Hover(
        contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text),
        range=_line_range(row.line, 0, None),
    )


def _locations(hits: list[tuple[Path, int]]) -> list[lsp.Location] | None:
    return [lsp.Location(uri=server.uri_of(p), range=_line_range(line, 0, 0)) for p, line in hits] or None


@server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
@server.thread()  # builds the file's tree view on first use
def text_document_definition(ls: SessionServer, params: lsp.DefinitionParams) -> list[lsp.Location] | None:
    path = _path(params.text_document.uri)
    view = ls.view_of(path)
    index = ls.index_for(path)
    if view is None or index is None:
        return None
    return _locations(navigation.definition(path, view, index, params.position.line, params.position.character))


@server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
@server.thread()  # builds the file's tree view on first use
def text_document_references(ls: SessionServer, params: lsp.ReferenceParams) -> list[lsp.Location] | None:
    path = _path(params.text_document.uri)
    view = ls.view_of(path)
    index = ls.index_for(path)
    if view is None or index is None:
        return None
    return _locations(
        navigation.references(path, view, index, params.position.line, params.context.include_declaration)
    )


_SYMBOL_KIND = {
    "turn": lsp.SymbolKind.Event,
    "reply": lsp.SymbolKind.String,
    "tool": lsp.SymbolKind.Function,
    "result": lsp.SymbolKind.Constant,
    "compaction": lsp.SymbolKind.Namespace,
}


def _symbol(item: Item) -> lsp.DocumentSymbol:
    rng = lsp.Range(start=lsp.Position(line=item.line, character=0), end=lsp.Position(line=item.end_line, character=0))
    sel = _line_range(item.line, 0, 0)
    return lsp.DocumentSymbol(
        name=item.name,
        kind=_SYMBOL_KIND[item.kind],
        range=rng,
        selection_range=sel,
        detail=item.detail or None,
        children=[_symbol(c) for c in item.children] or None,
    )


@server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
@server.thread()  # builds the file's tree view on first use
def text_document_document_symbol(ls: SessionServer, params: lsp.DocumentSymbolParams) -> list[lsp.DocumentSymbol]:
    path = _path(params.text_document.uri)
    view = ls.view_of(path)
    return [_symbol(i) for i in turns(path, view)] if view is not None else []


@server.feature(lsp.TEXT_DOCUMENT_FOLDING_RANGE)
@server.thread()  # builds the file's tree view on first use
def text_document_folding_range(ls: SessionServer, params: lsp.FoldingRangeParams) -> list[lsp.FoldingRange]:
    path = _path(params.text_document.uri)
    view = ls.view_of(path)
    if view is None:
        return []
    return [
        lsp.FoldingRange(start_line=i.line, end_line=i.end_line, kind=lsp.FoldingRangeKind.Region)
        for i in turns(path, view)
        if i.end_line > i.line
    ]


@server.feature(lsp.TEXT_DOCUMENT_CODE_LENS)
@server.thread()  # builds the file's tree view on first use
def text_document_code_lens(ls: SessionServer, params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
    path = _path(params.text_document.uri)
    view = ls.view_of(path)
    if view is None:
        return []
    writes = ("sessions/fork", "sessions/resume") if ls.stores.feed_of(path) is not None else ()
    # a store session is continued only once pulled: no "Fork here" or "Resume from here" on it
    return [
        lsp.CodeLens(
            range=_line_range(lens.line, 0, 0),
            command=lsp.Command(title=lens.title, command=lens.command, arguments=lens.arguments),
        )
        for lens in lenses(view)
        if lens.command not in writes
    ]


@server.feature(lsp.WORKSPACE_SYMBOL)
async def workspace_symbol(ls: SessionServer, params: lsp.WorkspaceSymbolParams) -> list[lsp.SymbolInformation]:
    """Sessions by title and prompts, then matching messages (full-text search), local and in the stores
    (`session-store:` URIs); off the event loop. `$/cancelRequest` stops the search database's catch-up at the
    next file (the first search of a big folder reads all of it), which keeps what it read."""
    stop = threading.Event()
    try:
        return await asyncio.to_thread(_workspace_symbols, ls, params, stop)
    except asyncio.CancelledError:
        stop.set()
        raise


def _workspace_symbols(
    ls: SessionServer, params: lsp.WorkspaceSymbolParams, stop: threading.Event
) -> list[lsp.SymbolInformation]:
    wanted = bool(params.query.strip())
    roots = [feed.root for feed in ls.stores.feeds]
    with ls.search_lock:
        search = ls.search_catch_up(stop) if wanted else None
        in_stores = ls.stores.search.catch_up(roots) if wanted and ls.stores.search is not None else None
        symbols = workspace_symbols(ls.projects_dir, params.query, search, roots, in_stores)
    return [
        lsp.SymbolInformation(
            name=sym.name,
            kind=lsp.SymbolKind.File if sym.is_session else lsp.SymbolKind.String,
            location=lsp.Location(uri=ls.uri_of(sym.path), range=_line_range(sym.line, 0, 0)),
            container_name=sym.container,
        )
        for sym in symbols
    ]


# -- custom requests -------------------------------------------------------------------------
def _service(ls: SessionServer) -> SessionRequests:
    if ls.requests is None:
        raise InvalidArgument("server not initialized")
    return ls.requests


SESSION_REQUESTS: dict[str, Callable[[SessionRequests, dict[str, Any]], dict[str, Any]]] = {
    "sessions/list": SessionRequests.list,
    "sessions/tree": SessionRequests.tree,
    "sessions/chain": SessionRequests.chain,
    "sessions/resume": SessionRequests.resume,
    "sessions/fork": SessionRequests.fork,
    "sessions/conversation": SessionRequests.conversation,
}
"""The plain `sessions/*` requests, each a method of `server.features.requests.SessionRequests`."""
WRITING_REQUESTS = {"sessions/fork"}
"""Requests that write a session file: the index takes the file named by the result's `path` at once."""


def serve_request(ls: SessionServer, method: str, params: Any) -> dict[str, Any]:
    """Answer one of SESSION_REQUESTS; our errors become JSON-RPC errors (`server.lsp.errors`)."""
    plain = _object_params(params)
    quick = method == "sessions/list" and plain.get("partial") is True and not ls.ready.is_set()
    try:
        with ls.give_way.answering() if quick else contextlib.nullcontext():
            result: dict[str, Any] = ls.answer_and_keep(
                method, plain, lambda: (SESSION_REQUESTS[method](_service(ls), plain), True)
            )
    except SessionLspError as exc:
        raise to_jsonrpc(exc) from exc
    if method in WRITING_REQUESTS and ls.index is not None:
        ls.on_index_change(ls.index.update_file(Path(result["path"])))
    return result


def _register_request(method: str) -> None:
    def handler(ls: SessionServer, params: Any) -> dict[str, Any]:
        return serve_request(ls, method, params)

    handler.__name__ = method.replace("/", "_")
    server.feature(method)(server.thread()(handler))  # they read whole folders or files: off the event loop


for _method in SESSION_REQUESTS:
    _register_request(_method)


def _progress_message(event: dict[str, Any]) -> str | None:
    kind = event.get("kind")
    if kind == "text":
        return str(event.get("text", ""))
    if kind == "tool_call":
        return f"\n[tool {event.get('name')} {event.get('id')}]\n"
    if kind == "tool_result":
        err = " error" if event.get("isError") else ""
        return f"[result{err} {event.get('id')}]\n"
    if kind == "retry":
        return f"\n[retrying: {event.get('error')}]\n"
    return None


def _ask_permission(
    ls: SessionServer, loop: asyncio.AbstractEventLoop, ask: PermissionAsk, cancel: CancelToken
) -> Decision:
    """Ask the editor (`sessions/permission`) from a turn thread; no answer in ASK_TIMEOUT seconds or a failed
    request is a denial, a turn cancelled meanwhile raises `TurnCancelled` (the turn ends as cancelled, not denied).
    A prompt no longer waited for is withdrawn: the editor gets `$/cancelRequest` for it."""
    msg_id = f"permission-{uuid.uuid4()}"

    async def send() -> Any:
        try:
            return await ls.protocol.send_request_async("sessions/permission", ask.to_json(), msg_id=msg_id)
        except asyncio.CancelledError:
            ls.protocol._request_futures.pop(msg_id, None)  # a late answer is then dropped (logged), not set on it
            ls.protocol.notify("$/cancelRequest", lsp.CancelParams(id=msg_id))
            raise

    future = asyncio.run_coroutine_threadsafe(send(), loop)
    deadline = time.monotonic() + ASK_TIMEOUT
    while not cancel.cancelled and time.monotonic() < deadline:
        try:
            return parse_decision(to_plain(future.result(timeout=0.1)))
        except concurrent.futures.TimeoutError:
            continue
        except Exception:  # noqa: BLE001 - the client refused or failed: deny
            if cancel.cancelled:
                break  # cancelled with the turn (shutdown cancels both)
            log.warning("sessions/permission failed; denying", exc_info=True)
            return "deny"
    future.cancel()
    if cancel.cancelled:
        raise TurnCancelled()
    return "deny"


@server.feature("sessions/runTurn")
async def sessions_run_turn(ls: SessionServer, params: Any) -> dict[str, Any]:
    """Run one agent turn on a turn thread (at most `TurnPool.limit` at once); progress streams the
    reply; $/cancelRequest stops it (the turn records the interruption, waited for at most
    CANCEL_GRACE seconds, then the request is answered as cancelled)."""
    from server.agent.loop import run_turn
    from server.agent.request import TurnRequest

    plain = _object_params(params)
    work_token = plain.get("workDoneToken")
    try:
        if work_token is not None and (isinstance(work_token, bool) or not isinstance(work_token, (str, int))):
            raise InvalidArgument("parameter 'workDoneToken' must be a string or an integer")
        if work_token is not None and work_token in ls.turn_progress:  # its cancel button would stop the other turn
            raise InvalidArgument("parameter 'workDoneToken' is the token of a turn still running; use a new one")
        service = _service(ls)
        service.same_projects_dir(plain)
        in_store = service.store_turn_target(plain)
        if in_store is None:
            service.refuse_store_write(plain, "running a turn")
        request = TurnRequest.from_json(plain)
        request.projects_dir = ls.projects_dir
    except SessionLspError as exc:
        raise to_jsonrpc(exc) from exc
    loop = asyncio.get_running_loop()
    token = CancelToken()

    def report(event: dict[str, Any]) -> None:
        message = _progress_message(event)
        if work_token is not None and message:
            ls.work_done_progress.report(work_token, lsp.WorkDoneProgressReport(message=message))

    def on_event(event: Any) -> None:
        loop.call_soon_threadsafe(report, event.to_json())

    if work_token is not None:
        ls.turn_progress[work_token] = token
        ls.work_done_progress.begin(work_token, lsp.WorkDoneProgressBegin(title="Agent turn", cancellable=True))
    try:
        try:
            ask = (lambda a: _ask_permission(ls, loop, a, token)) if request.ask_permission else None
            options: dict[str, Any] = {"on_event": on_event, "cancel": token, "ask": ask, "grants": ls.grants}
            if in_store is None:
                future = ls.turns.submit(lambda: run_turn(request, **options).to_json(), token)
            else:
                future = ls.turns.submit(lambda: _store_turn(in_store, request, options), token)
            waiting = asyncio.wrap_future(future)
            result = await asyncio.shield(waiting)
        except asyncio.CancelledError:
            # off the event loop: a tool's cancel kills its process tree, rounds of /proc walks and a wait
            await asyncio.to_thread(token.cancel)
            done, _ = await asyncio.wait({waiting}, timeout=CANCEL_GRACE)
            if not done:
                log.warning("a cancelled turn is still recording its interruption; answering now")
            raise
    except SessionLspError as exc:
        raise to_jsonrpc(exc) from exc
    finally:
        if work_token is not None:
            ls.turn_progress.pop(work_token, None)
            ls.work_done_progress.end(work_token, lsp.WorkDoneProgressEnd(message="done"))
    out = result
    if ls.index is not None and out.get("path"):
        ls.on_index_change(ls.index.update_file(Path(out["path"])))
    return out


@server.feature(lsp.WINDOW_WORK_DONE_PROGRESS_CANCEL)
def window_work_done_progress_cancel(ls: SessionServer, params: lsp.WorkDoneProgressCancelParams) -> None:
    """The cancel button of a turn's progress: the turn stops (its kill on a thread of its own, off the loop)."""
    token = ls.turn_progress.get(params.token)
    if token is not None:
        threading.Thread(target=token.cancel, name="turn-cancel", daemon=True).start()


def _store_turn(target: tuple[StoreFeed, str, str], request: Any, options: dict[str, Any]) -> dict[str, Any]:
    """A turn on a store session (`runTurn {store}`): run on its local copy, what it wrote appended to the
    store (`server.agent.store_turn`); the store's NOTIFY then brings it into the mirror."""
    from server.agent.store_turn import run_store_turn
    from storage.pgstore import PostgresSessionStore

    feed, project_key, session_id = target
    store = PostgresSessionStore(feed.source.url, schema=feed.source.schema, max_size=2)
    # a grant is for this store's session (its local copy's path is the same for every store holding that key)
    key = "\x00".join(("store", feed.source.url, feed.source.schema, project_key, session_id))
    return run_store_turn(store, project_key, session_id, request, **options, grant_key=key).to_json()


def store_document(ls: SessionServer, params: Any) -> dict[str, Any]:
    """`sessions/storeDocument {uri}`: the text of a store session's file (a `session-store:` URI), read
    from the mirror; the editor shows it read-only."""
    plain = _object_params(params)
    try:
        uri = str_param(plain, "uri", required=True)
        assert uri is not None
        path = ls.stores.path_of(uri)
        feed = ls.stores.feed_of(path) if path is not None else None
        if path is None or feed is None:
            raise InvalidArgument(f"not a document of this server's session stores: {uri}")
        real = resolve_target(feed.root, path=path, access="read")
        with open_regular(real) as fh:
            text = fh.read().decode("utf-8", "replace")
    except SessionLspError as exc:
        raise to_jsonrpc(exc) from exc
    return {"uri": uri, "text": text, "store": feed.source.name, "readOnly": True}


server.feature("sessions/storeDocument")(server.thread()(store_document))


def _register_command(name: str) -> None:
    """Each custom request is also a `workspace/executeCommand` command taking one object."""
    if name == "sessions/storeDocument":

        def store_document_command(ls: SessionServer, *args: Any) -> Any:
            return store_document(ls, args[0] if args else {})

        server.command(name)(server.thread()(store_document_command))
        return
    if name == "sessions/runTurn":

        async def run_command(ls: SessionServer, *args: Any) -> Any:
            return await sessions_run_turn(ls, args[0] if args else {})

        server.command(name)(run_command)
        return

    def command(ls: SessionServer, *args: Any) -> Any:
        return serve_request(ls, name, args[0] if args else {})

    server.command(name)(server.thread()(command))


for _name in CUSTOM_REQUESTS:
    _register_command(_name)
