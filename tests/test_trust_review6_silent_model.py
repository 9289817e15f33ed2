"""A turn stops when asked while the model has not answered yet.

The Anthropic provider waits for the response's headers inside `messages.create(stream=True)`, and only then did
it hand the cancel token a way to close the connection. A model endpoint (a gateway, a proxy, an overloaded server)
that takes the request and says nothing held the turn's thread through `$/cancelRequest` for as long as the client's
timeout (600 s): the request was answered "cancelled" after `CANCEL_GRACE`, but the turn ran on, holding its
session (every later turn on it refused `in-use`) and its place in the turn pool, and recorded no interruption.
Here the endpoint is a loopback socket that reads the request and never writes. Before: the interruption was never
recorded and the next turn on the session was refused `in-use` (pid of the server itself)."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rawlsp import LIVENESS, RawServer

REQUEST_CANCELLED = -32800


class SilentModel:
    """A loopback HTTP endpoint that accepts every connection, reads what comes, and never answers; counts the
    connections accepted and those the client closed."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.accepted = 0
        self.closed = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self._lock:
                self.accepted += 1
            threading.Thread(target=self._hold, args=(conn,), daemon=True).start()

    def _hold(self, conn: socket.socket) -> None:
        with conn:
            while conn.recv(65536):
                pass
        with self._lock:
            self.closed += 1

    def wait(self, what: str, count: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if getattr(self, what) >= count:
                    return True
            time.sleep(0.05)
        return False


@pytest.fixture
def silent() -> Iterator[SilentModel]:
    model = SilentModel()
    yield model
    model.sock.close()


def test_cancel_while_the_model_has_not_answered_stops_the_turn(
    silent: SilentModel, projects: Path, work: Path
) -> None:
    env = {**os.environ, "ANTHROPIC_BASE_URL": silent.base_url}
    with RawServer(env=env) as server:
        server.initialize(projects, watch=False)
        msg_id = server.request("sessions/runTurn", {"prompt": "hello", "cwd": str(work), "provider": "anthropic"})
        assert silent.wait("accepted", 1, LIVENESS), "the turn never asked the model"
        time.sleep(0.5)  # the request is sent and waits for the response's headers
        server.notify("$/cancelRequest", {"id": msg_id})
        reply = server.answer(msg_id, timeout=LIVENESS)
        assert reply.get("error", {}).get("code") == REQUEST_CANCELLED, reply
        (path,) = projects.glob("*/*.jsonl")
        deadline = time.monotonic() + LIVENESS
        while "Request interrupted by user" not in path.read_text():
            assert time.monotonic() < deadline, f"no interruption recorded: {path.read_text()[-600:]}"
            time.sleep(0.05)
        # the session is free again: a turn on it is admitted and asks the model (which keeps it waiting too)
        again = server.request("sessions/runTurn", {"sessionId": path.stem, "prompt": "again", "provider": "anthropic"})
        admitted = silent.wait("accepted", 2, LIVENESS)
        server.notify("$/cancelRequest", {"id": again})
        reply = server.answer(again, timeout=LIVENESS)
        assert admitted, f"the session was still held: {reply}"
