"""Serving one editor over a loopback TCP port, and who may be that editor.

A port is open to every process of the machine, and a language server here reads every transcript and runs
agent turns whose tools run commands. So `serve --tcp` listens on a loopback address only, and the first
message of a connection must be `initialize` carrying the server's secret as `initializationOptions.token`.
A connection that sends anything else, a wrong token, more than `FIRST_FRAME_MAX` bytes, or nothing whole
within `AUTH_TIMEOUT_S` seconds is closed before the server sees a byte of it. The first connection to
authenticate is the only one: the port is closed then, and that connection is served as stdio is (strict
framing, the process ends with it). The token is taken out of the options before the server reads them.
"""

from __future__ import annotations

import contextlib
import hmac
import io
import ipaddress
import json
import logging
import os
import queue
import secrets
import socket
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Any

from storage.errors import InvalidArgument, Unsafe

AUTH_TIMEOUT_S = 10.0
"""How long a new connection has to send its whole `initialize`."""
FIRST_FRAME_MAX = 1024 * 1024
"""The largest first frame (headers and body) a connection may send before it is authenticated."""
PENDING_MAX = 16
"""Connections checked at once; more are closed at once."""
POLL_S = 0.1
"""How often the listener looks for a connection that authenticated."""
TOKEN_MIN = 16
"""The shortest token accepted from the environment or a token file."""
TOKEN_ENV = "SESSION_LSP_TOKEN"

log = logging.getLogger(__name__)


class Refused(Exception):
    """A connection that did not authenticate; the message says why (logged, and sent to it when it gave an id)."""

    def __init__(self, message: str, msg_id: Any = None) -> None:
        super().__init__(message)
        self.msg_id = msg_id


def loopback_host(host: str, port: int) -> None:
    """Raise unless every address `host` names is a loopback one (127.0.0.0/8, ::1)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise InvalidArgument(f"--tcp: cannot resolve {host!r}: {exc}") from exc
    for info in infos:
        addr = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if not addr.is_loopback:
            raise InvalidArgument(
                f"--tcp listens on loopback only ({host!r} is {addr}): anyone who reaches the port could read every "
                "transcript and run commands; reach a remote server through an SSH tunnel to its loopback port"
            )


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


def accept_editor(host: str, port: int, token: str, told: str) -> Connection:
    """Listen on `host:port` until one connection authenticates; close the port and return that connection.
    Connections are checked side by side (at most `PENDING_MAX` at once), so one that stays silent does not keep
    the editor waiting behind it."""
    listener = socket.create_server((host, port), family=_family(host, port))
    name = listener.getsockname()
    print(
        f"session-lsp: listening on {name[0]}:{name[1]}; clients send initializationOptions.token, {told}",
        file=sys.stderr,
        flush=True,
    )
    admitted: queue.SimpleQueue[Connection] = queue.SimpleQueue()
    pending = threading.BoundedSemaphore(PENDING_MAX)
    chosen = threading.Event()

    def check(conn: socket.socket, peer: Any) -> None:
        try:
            first = _authenticate(conn, token)
        except Refused as exc:
            log.warning("refused a connection from %s: %s", peer, exc)
            _refuse(conn, exc)
        except OSError as exc:
            log.warning("a connection from %s failed before it authenticated: %s", peer, exc)
            conn.close()
        else:
            if chosen.is_set():
                _refuse(conn, Refused("another editor is already connected"))
            else:
                chosen.set()
                admitted.put(Connection(conn, first))
        finally:
            pending.release()

    with listener:
        listener.settimeout(POLL_S)
        while True:
            with contextlib.suppress(queue.Empty):
                editor = admitted.get_nowait()
                editor.socket.settimeout(None)
                return editor
            try:
                conn, peer = listener.accept()
            except TimeoutError:
                continue
            if not pending.acquire(blocking=False):
                log.warning("refused a connection from %s: %d others are being checked", peer, PENDING_MAX)
                conn.close()
                continue
            threading.Thread(target=check, args=(conn, peer), name="tcp-check", daemon=True).start()


def _family(host: str, port: int) -> socket.AddressFamily:
    return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]


def _authenticate(conn: socket.socket, token: str) -> bytes:
    """Read the first frame within the deadline and check it; return it, token removed, as a frame again, with
    any bytes received after it."""
    deadline = time.monotonic() + AUTH_TIMEOUT_S
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += _recv(conn, deadline, len(buf))
    head, _, body = buf.partition(b"\r\n\r\n")
    length = None
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            length = int(value.strip())
    if length is None or length > FIRST_FRAME_MAX:
        raise Refused("the first frame has no usable Content-Length")
    while len(body) < length:
        body += _recv(conn, deadline, len(head) + len(body))
    body, after = body[:length], body[length:]  # what a client sent on without waiting is served next
    try:
        message = json.loads(body)
    except ValueError as exc:
        raise Refused("the first frame is not JSON") from exc
    if not isinstance(message, dict) or message.get("method") != "initialize":
        raise Refused("the first message is not initialize")
    msg_id = message.get("id")
    params = message.get("params")
    options = params.get("initializationOptions") if isinstance(params, dict) else None
    sent = options.pop("token", None) if isinstance(options, dict) else None
    if not isinstance(sent, str) or not hmac.compare_digest(sent.encode(), token.encode()):
        raise Refused("initializationOptions.token is missing or wrong", msg_id)
    out = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(out), out) + after


def _recv(conn: socket.socket, deadline: float, have: int) -> bytes:
    left = deadline - time.monotonic()
    if left <= 0:
        raise Refused(f"no whole initialize within {AUTH_TIMEOUT_S:g} s")
    if have > FIRST_FRAME_MAX:
        raise Refused(f"a first frame larger than {FIRST_FRAME_MAX} bytes")
    conn.settimeout(left)
    try:
        data = conn.recv(65536)
    except TimeoutError as exc:
        raise Refused(f"no whole initialize within {AUTH_TIMEOUT_S:g} s") from exc
    if not data:
        raise Refused("the connection closed before a whole initialize")
    return data


def _refuse(conn: socket.socket, exc: Refused) -> None:
    """Tell a refused connection why when it gave a request id, then close it."""
    try:
        if exc.msg_id is not None:
            body = json.dumps(
                {"jsonrpc": "2.0", "id": exc.msg_id, "error": {"code": -32600, "message": f"refused: {exc}"}}
            ).encode()
            conn.settimeout(1.0)
            conn.sendall(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    except OSError:
        pass
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
