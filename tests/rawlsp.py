"""A bare LSP client over a raw stdio pipe to a real `session-lsp serve` process.

Unlike pytest-lsp it can send any bytes (broken frames), sees the process's exit status, and
measures how long the process takes to end. A reader thread parses the server's frames, answers
the server's own requests (`window/workDoneProgress/create`...) with null, and keeps responses
by id and notifications in order.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LIVENESS = 10.0
"""A hang detector, not a speed requirement: a process or an answer taking longer is stuck."""


def _loads(body: bytes) -> Any:
    """A frame's message; one nested past Python's parser (about 1,000 levels, as an editor's JavaScript parser
    takes) with orjson, which goes to 1,024."""
    try:
        return json.loads(body)
    except RecursionError:
        import orjson

        return orjson.loads(body)


class RawServer:
    def __init__(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        command: list[str] | None = None,
        answer_requests: bool = True,
        cwd: Path | None = None,
        hold: tuple[str, ...] = (),
    ) -> None:
        """`session-lsp serve --stdio ARGS`, run as `command` (default: this interpreter, `-m server.cli`) in
        `cwd` (default: the repository); the server's own requests are answered with null unless
        `answer_requests` is False or their method is in `hold` (kept in `asked`, whole in `requests`)."""
        self.proc = subprocess.Popen(
            [*(command or [sys.executable, "-m", "server.cli"]), "serve", "--stdio", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
            cwd=cwd or ROOT,
            env=env,
        )
        self._cond = threading.Condition()
        self.answer_requests = answer_requests
        self.asked: list[str] = []
        """The methods of the server's own requests, in order."""
        self.requests: list[dict[str, Any]] = []
        """The server's own requests, whole, in order."""
        self.hold = hold
        self.responses: dict[Any, dict[str, Any]] = {}
        self.notifications: list[dict[str, Any]] = []
        self.arrivals: list[Any] = []
        """The ids of the responses in the order they arrived."""
        self.stderr = b""
        self.broken: str | None = None
        """Why the server's output stopped being well-formed frames, if it did."""
        self._write_lock = threading.Lock()
        self._next_id = 1000
        threading.Thread(target=self._read, name="raw-lsp-out", daemon=True).start()
        threading.Thread(target=self._read_err, name="raw-lsp-err", daemon=True).start()

    # -- output ------------------------------------------------------------------------------
    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            header = b""
            while not header.endswith(b"\r\n\r\n"):
                ch = out.read(1)
                if not ch:
                    with self._cond:
                        self._cond.notify_all()
                    return
                header += ch
            length = int(header.split(b"Content-Length:")[1].split(b"\r\n")[0])
            body = b""
            while len(body) < length:
                chunk = out.read(length - len(body))
                if not chunk:
                    return
                body += chunk
            try:
                msg = _loads(body)
            except ValueError as exc:  # a broken frame (e.g. two frames interleaved): the stream is lost
                with self._cond:
                    at = getattr(exc, "pos", 0)
                    self.broken = f"{exc}: {body[max(0, at - 200) : at + 200]!r}"
                    self._cond.notify_all()
                return
            if "method" in msg and "id" in msg:  # the server asks us something: say yes
                with self._cond:
                    self.asked.append(msg["method"])
                    self.requests.append(msg)
                if self.answer_requests and msg["method"] not in self.hold:
                    self.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
                continue
            with self._cond:
                if "method" in msg:
                    self.notifications.append(msg)
                else:
                    self.responses[msg.get("id")] = msg
                    self.arrivals.append(msg.get("id"))
                self._cond.notify_all()

    def _read_err(self) -> None:
        err = self.proc.stderr
        assert err is not None
        while True:
            chunk = err.read(4096)
            if not chunk:
                return
            self.stderr += chunk

    # -- input -------------------------------------------------------------------------------
    def write(self, data: bytes) -> None:
        with self._write_lock:
            assert self.proc.stdin is not None
            try:
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass  # the server is gone, or its input closed by the test; the caller looks at its exit

    def send(self, obj: dict[str, Any]) -> None:
        body = json.dumps(obj).encode()
        self.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def request(self, method: str, params: Any = None, msg_id: Any = None) -> Any:
        """Send a request; returns its id (see `answer`)."""
        if msg_id is None:
            self._next_id += 1
            msg_id = self._next_id
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def answer(self, msg_id: Any, timeout: float = 60.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while msg_id not in self.responses:
                assert self.broken is None, f"the server's output broke: {self.broken}"
                left = deadline - time.monotonic()
                assert left > 0, f"no answer to request {msg_id!r} in {timeout} s; stderr: {self.stderr[-2000:]!r}"
                self._cond.wait(min(left, 0.5))
            return self.responses[msg_id]

    def call(self, method: str, params: Any = None, timeout: float = 60.0) -> dict[str, Any]:
        return self.answer(self.request(method, params), timeout)

    def initialize(self, projects: Path, capabilities: dict[str, Any] | None = None, **options: Any) -> None:
        reply = self.call(
            "initialize",
            {
                "processId": os.getpid(),
                "capabilities": {"window": {"workDoneProgress": True}} if capabilities is None else capabilities,
                "initializationOptions": {"projectsDir": str(projects), **options},
            },
        )
        assert "result" in reply, reply
        self.notify("initialized", {})

    def progress_of(self, token: str) -> list[dict[str, Any]]:
        with self._cond:
            return [
                n["params"]["value"]
                for n in self.notifications
                if n["method"] == "$/progress" and n["params"].get("token") == token
            ]

    def wait_progress(self, token: str, needle: str, timeout: float = 60.0) -> None:
        """Until a progress report of `token` contains `needle` (the turn got that far)."""
        deadline = time.monotonic() + timeout
        while not any(needle in str(v.get("message", "")) for v in self.progress_of(token)):
            assert time.monotonic() < deadline, f"no progress {needle!r} on {token} in {timeout} s"
            time.sleep(0.05)

    # -- end ---------------------------------------------------------------------------------
    def wait_exit(self, timeout: float = LIVENESS) -> tuple[int | None, float]:
        """(exit status or None if still running after `timeout`, seconds waited)."""
        began = time.monotonic()
        try:
            rc: int | None = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = None
        return rc, time.monotonic() - began

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()
