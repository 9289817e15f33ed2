"""Serving one editor over a loopback TCP port, and who may be that editor.

A port is open to every process of the machine, and a language server here reads every transcript and runs
agent turns whose tools run commands. So `serve --tcp` listens on one loopback address only (a name resolving to
several is refused: `choose_address`), and the first
message of a connection must be `initialize` carrying the server's secret as `initializationOptions.token`.
A connection that sends anything else, a wrong token, more than `FIRST_FRAME_MAX` bytes, or nothing whole
within `AUTH_TIMEOUT_S` seconds is closed before the server sees a byte of it. The first connection to
authenticate is the only one: the port is closed then, and that connection is served as stdio is (strict
framing, the process ends with it). The token is taken out of the options before the server reads them.

Another local process may hold connections open, reopen them, or feed them a byte a second. So one thread reads
every waiting connection (no thread each), at most `PENDING_MAX` of them holding at most `PENDING_BYTES_MAX`
bytes between them: a new connection past that drops the one waiting longest, too many bytes the one holding the
most. What came with a connect is read as it is accepted, and those already waiting are read before more are
accepted, so an editor that sends its `initialize` at once gets in whatever else is waiting. That one thread
also decides the admission: exactly one editor; every other connection that completes an `initialize` is
refused (its id answered, as a wrong token's is), and anything malformed is a refusal, never an exception.
"""

from __future__ import annotations

import errno
import hmac
import io
import ipaddress
import json
import logging
import os
import secrets
import selectors
import socket
import stat
import sys
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from storage.errors import InvalidArgument, Unsafe

AUTH_TIMEOUT_S = 10.0
"""How long a new connection has to send its whole `initialize`."""
FIRST_FRAME_MAX = 1024 * 1024
"""The largest first frame (headers and body) a connection may send before it is authenticated."""
PENDING_MAX = 128
"""Connections read at once; a new one past that drops the one waiting longest."""
PENDING_BYTES_MAX = 16 * 1024 * 1024
"""The bytes all waiting connections may hold together; past that the one holding the most is dropped."""
ACCEPT_BATCH = 16
"""Connections taken off the backlog at a time, between readings of those already waiting."""
REPLY_ID_MAX = 256
"""The longest string id a refusal answers (a longer one, or an id neither string nor integer, gets none)."""
LOG_BURST = 20
"""Ended connections logged one by one per `LOG_WINDOW_S`; past that they are counted, and the count logged."""
LOG_WINDOW_S = 10.0
TOKEN_MIN = 16
"""The shortest token accepted from the environment or a token file."""
TOKEN_ENV = "SESSION_LSP_TOKEN"

log = logging.getLogger(__name__)


class Refused(Exception):
    """A connection that did not authenticate; the message says why (logged, and sent to it when it gave an id)."""

    def __init__(self, message: str, msg_id: int | str | None = None) -> None:
        super().__init__(message)
        self.msg_id = msg_id


Address = tuple[socket.AddressFamily, tuple[Any, ...]]
"""A family and a numeric socket address, as `socket.getaddrinfo` gives them."""


def listen_address(host: str, port: int) -> Address:
    """The one numeric address `serve --tcp HOST:PORT` listens on: `host` resolved once, and decided by
    `choose_address`; the listener binds that numeric address, never the name again (which could resolve to
    another address by then)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise InvalidArgument(f"--tcp: cannot resolve {host!r}: {exc}") from exc
    return choose_address(host, port, [(info[0], info[4]) for info in infos])


def choose_address(host: str, port: int, resolved: list[Address]) -> Address:
    """Of the addresses `host` resolved to, the one to listen on: each must be a loopback one (127.0.0.0/8,
    ::1), and there must be exactly one. A name naming two (`localhost` as `::1` and `127.0.0.1`) is refused:
    listening on one left the same port of the other to any local user, whose listener then received the
    `initialize` (and its token) of an editor connecting to that other address."""
    distinct: dict[str, Address] = {}
    for family, sockaddr in resolved:
        text = str(sockaddr[0]).split("%")[0]
        addr = ipaddress.ip_address(text)
        if not addr.is_loopback:
            raise InvalidArgument(
                f"--tcp listens on loopback only ({host!r} is {addr}): anyone who reaches the port could read every "
                "transcript and run commands; reach a remote server through an SSH tunnel to its loopback port"
            )
        distinct.setdefault(str(addr), (family, sockaddr))
    if not distinct:
        raise InvalidArgument(f"--tcp: {host!r} resolves to no address")
    if len(distinct) > 1:
        forms = " or ".join(f"--tcp {f'[{a}]' if ':' in a else a}:{port}" for a in distinct)
        raise InvalidArgument(
            f"--tcp: {host!r} names {len(distinct)} addresses ({', '.join(distinct)}); listening on one would leave "
            "the same port of the others to any local user, who would receive your editor's initialize and its "
            f"token. Give the numeric address your editor connects to: {forms}"
        )
    return next(iter(distinct.values()))


def server_token(token_file: Path | None) -> tuple[str, str]:
    """The secret clients must send, and where it came from: the token file (made 0600 with a new token when
    it does not exist), else `SESSION_LSP_TOKEN`, else a new one (printed on stderr)."""
    if token_file is not None:
        return _token_from_file(token_file), f"in {token_file}"
    env = os.environ.get(TOKEN_ENV)
    if env is not None:
        if len(env.strip()) < TOKEN_MIN:
            raise InvalidArgument(f"{TOKEN_ENV} is shorter than {TOKEN_MIN} characters")
        return env.strip(), f"from {TOKEN_ENV}"
    token = secrets.token_urlsafe(32)
    return token, f"{token} (new; pass --token-file or {TOKEN_ENV} to keep one)"


def _token_from_file(path: Path) -> str:
    """Read the token file, or make it: never through a link, only a regular file of ours no one else may read."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        pass
    else:
        token = secrets.token_urlsafe(32)
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(token + "\n")
        return token
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise Unsafe(f"--token-file {path}: cannot open it without following a link: {exc.strerror}") from exc
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            raise Unsafe(f"--token-file {path}: must be a regular file of yours that no one else may read (0600)")
        token = fh.read(4096).decode("ascii", "replace").strip()
    if len(token) < TOKEN_MIN:
        raise InvalidArgument(f"--token-file {path}: the token is shorter than {TOKEN_MIN} characters")
    return token


class Connection:
    """An authenticated connection as the two streams `SessionServer.start_io` serves."""

    def __init__(self, conn: socket.socket, first: bytes) -> None:
        self.socket = conn
        self.reader = io.BufferedReader(_Replayed(conn, first))
        self.writer = conn.makefile("wb")


def accept_editor(address: Address, token: str, told: str) -> Connection:
    """Listen on `address` (`listen_address`) until one connection authenticates; close the port and return that
    connection. The connections waiting then are refused in the background as they complete, or closed at their
    deadline."""
    family, sockaddr = address
    listener = socket.create_server(sockaddr, family=family, backlog=PENDING_MAX)
    name = listener.getsockname()
    where = f"[{name[0]}]" if family == socket.AF_INET6 else name[0]
    print(
        f"session-lsp: listening on {where}:{name[1]}; clients send initializationOptions.token, {told}",
        file=sys.stderr,
        flush=True,
    )
    waiting = _Waiting(token)
    with listener:
        try:
            listener.setblocking(False)
            waiting.selector.register(listener, selectors.EVENT_READ, None)
            editor = waiting.until_admitted(listener)
            waiting.selector.unregister(listener)
            waiting.accept(listener, PENDING_MAX)  # connected before the port closes: refused, not reset
        except BaseException:
            waiting.close()
            raise
    threading.Thread(target=waiting.refuse_the_rest, name="tcp-refuse", daemon=True).start()
    return editor


class _Pending:
    """A connection not yet authenticated: what it sent so far, and when its time is up."""

    __slots__ = ("conn", "fd", "peer", "buf", "deadline", "done", "searched", "body_at", "length")

    def __init__(self, conn: socket.socket, peer: Any) -> None:
        self.conn = conn
        self.fd = conn.fileno()
        self.peer = peer
        self.buf = bytearray()
        self.deadline = time.monotonic() + AUTH_TIMEOUT_S
        self.done = False
        self.searched = 0
        """Bytes of `buf` known to hold no end of the headers: each read searches only what it added."""
        self.body_at = -1
        """Where the first frame's body starts, once its headers are whole (their Content-Length is `length`)."""
        self.length = 0

    def frame_end(self) -> int | None:
        """Where the first frame ends in `buf`, once it is whole; None before. Each byte is searched once and
        the headers parsed once, however many pieces the frame comes in. Raises `Refused` past `FIRST_FRAME_MAX`
        or without a usable Content-Length."""
        buf = self.buf
        if self.body_at < 0:
            end = buf.find(b"\r\n\r\n", max(0, self.searched - 3))
            if end < 0:
                self.searched = len(buf)
                if len(buf) > FIRST_FRAME_MAX:
                    raise Refused(f"a first frame larger than {FIRST_FRAME_MAX} bytes")
                return None
            self.body_at, self.length = end + 4, _content_length(bytes(buf[:end]))
        end = self.body_at + self.length
        return end if len(buf) >= end else None


class _Waiting:
    """The connections being read, all by one thread, which also decides, once, who is admitted."""

    def __init__(self, token: str) -> None:
        self.token = token.encode("utf-8", "surrogatepass")
        self.selector = selectors.DefaultSelector()
        self.pending: OrderedDict[int, _Pending] = OrderedDict()  # by descriptor; oldest, so soonest due, first
        self.held = 0
        self.admitted = False
        self.told_full = False
        self.window = 0.0
        self.logged = 0
        self.unlogged = 0

    def until_admitted(self, listener: socket.socket) -> Connection:
        """Read and accept until a connection authenticates; return it (`admitted` is then set)."""
        while True:
            editor: Connection | None = None
            accept = False
            for key, _ in self.selector.select(self.time_left()):
                if key.data is None:
                    accept = True
                else:  # those waiting first: a flood of new connections does not push out one that has sent
                    editor = self.read(key.data) or editor
            if accept and editor is None:
                editor = self.accept(listener, ACCEPT_BATCH)
            self.expire()
            if editor is not None:
                return editor

    def accept(self, listener: socket.socket, batch: int) -> Connection | None:
        """Take up to `batch` connections off the backlog, reading what each sent with its connect."""
        editor: Connection | None = None
        for _ in range(batch):
            try:
                conn, peer = listener.accept()
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:
                if exc.errno not in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    continue  # ECONNABORTED and the like: that one is gone, the next may not be
                if not self.pending:
                    time.sleep(0.1)  # nothing of ours to give back: do not spin on the backlog
                    break
                self._drop(next(iter(self.pending.values())), "out of file descriptors")
                continue
            editor = self.add(conn, peer) or editor
        return editor

    def add(self, conn: socket.socket, peer: Any) -> Connection | None:
        """Wait for a new connection, dropping the oldest waiting when full; read what it already sent."""
        while len(self.pending) >= PENDING_MAX:
            if not self.told_full:
                self.told_full = True
                log.warning("more than %d connections wait to authenticate: the oldest are dropped", PENDING_MAX)
            self._drop(next(iter(self.pending.values())), "more connections waiting")
        try:
            conn.setblocking(False)
            waiter = _Pending(conn, peer)
            self.selector.register(conn, selectors.EVENT_READ, waiter)
        except (OSError, ValueError) as exc:
            self._note(peer, f"failed before it authenticated: {exc}")
            conn.close()
            return None
        self.pending[waiter.fd] = waiter
        return self.read(waiter)

    def read(self, waiter: _Pending) -> Connection | None:
        """Take what `waiter` sent; the editor when its first frame is whole and right and none is in yet."""
        if waiter.done:
            return None  # dropped earlier in this turn of the loop
        try:
            data = waiter.conn.recv(65536)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError as exc:
            self._note(waiter.peer, f"failed before it authenticated: {exc}")
            self._drop(waiter, str(exc))
            return None
        if not data:
            self._refuse(waiter, Refused("the connection closed before a whole initialize"))
            return None
        waiter.buf += data
        self.held += len(data)
        try:
            end = waiter.frame_end()
            first = None if end is None else _check(waiter.buf, waiter.body_at, end, self.token)
        except Refused as exc:
            self._refuse(waiter, exc)
            return None
        except Exception:  # noqa: BLE001 - whatever a stranger sends is a refusal, never a failure of ours
            log.debug("a malformed first frame", exc_info=True)
            self._refuse(waiter, Refused("the first frame is malformed"))
            return None
        if first is None:
            while self.held > PENDING_BYTES_MAX:
                self._drop(max(self.pending.values(), key=lambda p: len(p.buf)), "too many bytes waiting")
            return None
        frame, msg_id = first
        if self.admitted:
            self._refuse(waiter, Refused("another editor is already connected", msg_id))
            return None
        self.admitted = True
        self._forget(waiter)
        waiter.conn.setblocking(True)
        return Connection(waiter.conn, frame)

    def time_left(self) -> float | None:
        """Seconds until the soonest deadline, None when nothing is waiting."""
        for waiter in self.pending.values():
            return max(0.0, waiter.deadline - time.monotonic())
        return None

    def expire(self) -> None:
        """Refuse every connection whose deadline has passed."""
        now = time.monotonic()
        while self.pending:
            waiter = next(iter(self.pending.values()))
            if waiter.deadline > now:
                break
            self._refuse(waiter, Refused(f"no whole initialize within {AUTH_TIMEOUT_S:g} s"))

    def refuse_the_rest(self) -> None:
        """Once the editor is in: read the others on until each completes (refused) or its deadline passes."""
        try:
            while self.pending:
                for key, _ in self.selector.select(self.time_left()):
                    self.read(key.data)
                self.expire()
        except Exception:  # noqa: BLE001 - the editor is being served; these are only to be closed
            log.exception("refusing the connections that waited beside the editor's")
        finally:
            self.close()

    def close(self) -> None:
        """Close every waiting connection, and the selector."""
        for waiter in list(self.pending.values()):
            self._drop(waiter, "closing")
        self.selector.close()

    def _forget(self, waiter: _Pending) -> None:
        if waiter.done:
            return
        waiter.done = True
        self.held -= len(waiter.buf)
        self.pending.pop(waiter.fd, None)
        try:
            self.selector.unregister(waiter.conn)
        except (KeyError, ValueError):
            pass

    def _drop(self, waiter: _Pending, why: str) -> None:
        log.debug("dropped a waiting connection from %s: %s", waiter.peer, why)
        self._forget(waiter)
        waiter.conn.close()

    def _refuse(self, waiter: _Pending, exc: Refused) -> None:
        self._note(waiter.peer, f"was refused: {exc}")
        self._forget(waiter)
        _refuse(waiter.conn, exc)

    def _note(self, peer: Any, what: str) -> None:
        """Log a connection's end, at most `LOG_BURST` a window, so that a flood of them does not flood the log."""
        now = time.monotonic()
        if now - self.window >= LOG_WINDOW_S:
            if self.unlogged:
                log.warning("and %d more connections ended before they authenticated", self.unlogged)
            self.window, self.logged, self.unlogged = now, 0, 0
        if self.logged < LOG_BURST:
            self.logged += 1
            log.warning("a connection from %s %s", peer, what)
        else:
            self.unlogged += 1


def _content_length(head: bytes) -> int:
    """The first frame's Content-Length from its header lines; `Refused` when none is usable."""
    length = None
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        value = value.strip()
        if name.strip().lower() == b"content-length" and value.isdigit() and len(value) <= 12:
            length = int(value)
    if length is None or length > FIRST_FRAME_MAX:
        raise Refused("the first frame has no usable Content-Length")
    return length


def _check(buf: bytearray, start: int, end: int, token: bytes) -> tuple[bytes, int | str | None]:
    """The first frame (its body `buf[start:end]`), token removed, as a frame again followed by any bytes received
    after it, and its id. Raises `Refused` unless it is an `initialize` with the token."""
    body, after = bytes(buf[start:end]), bytes(buf[end:])
    try:
        message = json.loads(body)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested deeper than the parser goes
        raise Refused("the first frame is not JSON") from exc
    if not isinstance(message, dict) or message.get("method") != "initialize":
        raise Refused("the first message is not initialize")
    msg_id = _reply_id(message.get("id"))
    params = message.get("params")
    options = params.get("initializationOptions") if isinstance(params, dict) else None
    sent = options.pop("token", None) if isinstance(options, dict) else None
    # surrogatepass: a lone surrogate (JSON's "\ud800") encodes too, so it is a wrong token, not an exception
    if not isinstance(sent, str) or not hmac.compare_digest(sent.encode("utf-8", "surrogatepass"), token):
        raise Refused("initializationOptions.token is missing or wrong", msg_id)
    try:
        out = json.dumps(message).encode()
    except (ValueError, RecursionError) as exc:
        raise Refused("the first frame is malformed", msg_id) from exc
    return b"Content-Length: %d\r\n\r\n%s" % (len(out), out) + after, msg_id


def _reply_id(msg_id: object) -> int | str | None:
    """The id a refusal answers: a request's integer or (short) string id, else none."""
    if isinstance(msg_id, bool):
        return None
    if isinstance(msg_id, int) or (isinstance(msg_id, str) and len(msg_id) <= REPLY_ID_MAX):
        return msg_id
    return None


def _refuse(conn: socket.socket, exc: Refused) -> None:
    """Tell a refused connection why when it gave a request id (one send, which never waits), then close it."""
    try:
        if exc.msg_id is not None:
            body = json.dumps(
                {"jsonrpc": "2.0", "id": exc.msg_id, "error": {"code": -32600, "message": f"refused: {exc}"}}
            ).encode()
            conn.setblocking(False)
            conn.send(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    except OSError:
        pass  # it does not read, or it has gone: closing is all there is left to do
    finally:
        conn.close()


class _Replayed(io.RawIOBase):
    """A connection's input with the (re-encoded) first frame given back ahead of what follows it."""

    def __init__(self, conn: socket.socket, first: bytes) -> None:
        self.conn = conn
        self.pending = first

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.pending:
            n = min(len(buffer), len(self.pending))
            buffer[:n] = self.pending[:n]
            self.pending = self.pending[n:]
            return n
        try:
            return self.conn.recv_into(buffer)
        except OSError:
            return 0  # a reset connection is the end of its stream
