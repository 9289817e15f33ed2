"""A scripted test model: a deterministic stand-in for the Anthropic Messages API on loopback.

This is NOT a real model. It answers from a tiny script keyed on the last user message, so that
tests (and the real Claude Code CLI pointed at it with ``ANTHROPIC_BASE_URL``) run offline:

- last user message (one made only of ``<system-reminder>`` texts, such as a background-task
  notification, is skipped) holds tool_result blocks -> ``I read it (N tool results).``
- ``READ <path>`` -> one ``Read`` tool_use; ``PAR <p1> <p2> ...`` -> ``Reading them all.`` plus one
  ``Read`` per path; ``AGENT <prompt>`` -> one ``Agent`` tool_use; ``LS``/``GLOB``/``GREP <arg>`` ->
  one ``LS``/``Glob``/``Grep`` tool_use; ``BASH <command>`` -> one ``Bash``; ``WRITE <path> <text>`` -> one
  ``Write``; ``EDITALL <path> <old> <new>`` -> one ``Edit`` with ``replace_all``;
- ``FAIL <n>`` -> HTTP 529 ``overloaded_error`` for n requests, then the normal echo;
- ``SLOW <prompt>`` -> the echo reply, streamed as 20 small deltas 0.2 s apart;
- anything else -> ``echo: <text>``.

A caller may pass its own ``planner`` (same signature as ``plan_reply``): scripts/make_example.py
scripts whole sessions that way.

Every request is recorded (``.requests``, and optionally one JSON line per request in a log file).
Run it in the foreground with ``python tests/scripted_api.py [--port P] [--log FILE]``; point the
``anthropic`` provider (or the real CLI) at it with ``ANTHROPIC_BASE_URL``. It lives in ``tests/``:
the product ships no test double.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SLOW_DELTAS = 20
SLOW_INTERVAL = 0.2
Planner = Callable[[list[Any]], tuple[str, list[dict[str, Any]]]]
"""Decides a reply from the request's messages: (kind, blocks), as ``plan_reply`` does."""
_UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


def session_id_from_metadata(body: dict[str, Any]) -> str | None:
    """The session id the caller put in ``metadata.user_id`` (JSON or ``..._session_<uuid>``)."""
    meta = body.get("metadata")
    user_id = meta.get("user_id") if isinstance(meta, dict) else None
    if not isinstance(user_id, str):
        return None
    try:
        parsed = json.loads(user_id)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("session_id"), str):
        return str(parsed["session_id"])
    m = re.search(r"session_(" + _UUID_RE.pattern + ")", user_id, re.I)
    if m:
        return m.group(1)
    found = _UUID_RE.findall(user_id)
    return found[-1] if found else None


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def _is_reminder(block: dict[str, Any]) -> bool:
    return block.get("type") == "text" and str(block.get("text", "")).lstrip().startswith("<system-reminder>")


def _last_user(messages: list[Any]) -> dict[str, Any] | None:
    """The last user message, skipping ones made only of system reminders (task notifications)."""
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    for m in reversed(users):
        blocks = _blocks(m)
        if not blocks or not all(_is_reminder(b) for b in blocks):
            return m
    return users[-1] if users else None


def plan_reply(messages: list[Any]) -> tuple[str, list[dict[str, Any]]]:
    """Decide the reply: (kind, blocks) where kind is normal/fail/slow; tool_use ids are left empty."""
    user = _last_user(messages)
    blocks = _blocks(user) if user else []
    results = [b for b in blocks if b.get("type") == "tool_result"]
    if results:
        last = max(i for i, b in enumerate(blocks) if b.get("type") == "tool_result")
        typed_after = [b for b in blocks[last + 1 :] if b.get("type") == "text" and not _is_reminder(b)]
        if not typed_after:
            return "normal", [_text(f"I read it ({len(results)} tool results).")]
    texts = [b for b in blocks if b.get("type") == "text"]
    text = str(texts[-1].get("text", "")).strip() if texts else ""
    word, _, rest = text.partition(" ")
    rest = rest.strip()
    if word == "READ" and rest:
        return "normal", [_tool("Read", {"file_path": rest})]
    if word == "PAR" and rest:
        reads = [_tool("Read", {"file_path": p}) for p in rest.split()]
        return "normal", [_text("Reading them all."), *reads]
    if word == "AGENT" and rest:
        return "normal", [
            _tool("Agent", {"description": "sub task", "prompt": rest, "subagent_type": "general-purpose"})
        ]
    if word == "LS" and rest:
        return "normal", [_tool("LS", {"path": rest})]
    if word == "GLOB" and rest:
        return "normal", [_tool("Glob", {"pattern": rest})]
    if word == "GREP" and rest:
        return "normal", [_tool("Grep", {"pattern": rest})]
    if word == "BASH" and rest:
        return "normal", [_tool("Bash", {"command": rest, "description": "run a command"})]
    if word == "WRITE" and rest:
        path, _, content = rest.partition(" ")
        return "normal", [_tool("Write", {"file_path": path, "content": content})]
    if word == "EDITALL" and len(rest.split(" ")) == 3:
        path, old, new = rest.split(" ")
        return "normal", [_tool("Edit", {"file_path": path, "old_string": old, "new_string": new, "replace_all": True})]
    if word == "FAIL" and rest.isdigit():
        return "fail", [_text(f"echo: {text}")]
    if word == "SLOW":
        return "slow", [_text(f"echo: {text}")]
    return "normal", [_text(f"echo: {text}")]


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _tool(name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": "", "name": name, "input": tool_input}


def _sse(event: str, data: dict[str, Any]) -> bytes:
    text = json.dumps(data, ensure_ascii=False)
    try:
        return f"event: {event}\ndata: {text}\n\n".encode()
    except UnicodeEncodeError:  # a lone surrogate a planner put in: sent as its JSON escape, as any endpoint may
        return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _chunks(text: str, n: int) -> list[str]:
    size = max(1, -(-len(text) // n))
    parts = [text[i : i + size] for i in range(0, len(text), size)]
    return parts + [""] * (n - len(parts)) if len(parts) < n else parts


class ScriptedModelServer:
    """The scripted test model served on 127.0.0.1; ``start()`` returns its base URL."""

    def __init__(
        self,
        port: int = 0,
        log_path: str | Path | None = None,
        seed: str = "scripted",
        slow_interval: float = SLOW_INTERVAL,
        planner: Planner | None = None,
    ) -> None:
        self.port = port
        self.planner: Planner = planner or plan_reply
        self.log_path = Path(log_path) if log_path else None
        self.seed = seed
        self.slow_interval = slow_interval
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._counter = 0
        self._fail_left = 0
        self._fail_armed: set[str] = set()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> str:
        """Bind (port 0 picks a free one), serve in a daemon thread, return ``http://127.0.0.1:PORT``."""
        handler = type("_BoundHandler", (_Handler,), {"model": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="scripted-model", daemon=True
        )
        self._thread.start()
        return self.base_url

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ScriptedModelServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- script ------------------------------------------------------------------------------
    def _next_hex(self, n: int) -> str:
        with self._lock:
            self._counter += 1
            count = self._counter
        return hashlib.sha256(f"{self.seed}:{count}".encode()).hexdigest()[:n]

    def record(self, path: str, body: dict[str, Any]) -> None:
        row = {
            "path": path,
            "sessionId": session_id_from_metadata(body),
            "messages": body.get("messages"),
            "model": body.get("model"),
            "system": body.get("system"),
            "tools": body.get("tools"),
            "metadata": body.get("metadata"),
            "stream": bool(body.get("stream")),
        }
        with self._lock:
            self.requests.append(row)
            if self.log_path is not None:
                with self.log_path.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(row, ensure_ascii=False) + "\n")

    def should_fail(self, body: dict[str, Any], kind: str, blocks: list[dict[str, Any]]) -> bool:
        """FAIL <n>: the first time a given request is seen, fail it and its next n-1 retries."""
        with self._lock:
            if kind == "fail":
                text = blocks[0]["text"]
                key = f"{session_id_from_metadata(body)}:{len(body.get('messages') or [])}:{text}"
                if key not in self._fail_armed:
                    self._fail_armed.add(key)
                    self._fail_left = int(text.split()[-1])
            if self._fail_left > 0:
                self._fail_left -= 1
                return True
            return False

    def build_message(self, body: dict[str, Any], blocks: list[dict[str, Any]]) -> dict[str, Any]:
        for b in blocks:
            if b["type"] == "tool_use":
                b["id"] = "toolu_" + self._next_hex(20)
        out_tokens = max(1, len(json.dumps(blocks)) // 4)
        return {
            "id": "msg_" + self._next_hex(24),
            "type": "message",
            "role": "assistant",
            "model": body.get("model") or "scripted-test-model",
            "content": blocks,
            "stop_reason": "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": count_tokens(body),
                "output_tokens": out_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        }


def count_tokens(body: dict[str, Any]) -> int:
    """A rough input-token count: a quarter of the JSON size of messages, system and tools."""
    size = len(json.dumps([body.get("messages"), body.get("system"), body.get("tools")], ensure_ascii=False))
    return max(1, size // 4)


def stream_events(message: dict[str, Any], slow: bool) -> Iterator[tuple[bytes, float]]:
    """The SSE events of ``message`` as the streaming Messages API sends them, with a delay each."""
    start = dict(message, content=[], stop_reason=None, usage=dict(message["usage"], output_tokens=1))
    yield _sse("message_start", {"type": "message_start", "message": start}), 0.0
    yield _sse("ping", {"type": "ping"}), 0.0
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield (
                _sse(
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
                ),
                0.0,
            )
            parts = _chunks(block["text"], SLOW_DELTAS) if slow else [block["text"]]
            for part in parts:
                delta = {"type": "text_delta", "text": part}
                yield (
                    _sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
                    (1.0 if slow else 0.0),
                )
        else:
            head = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            yield (
                _sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": head}),
                0.0,
            )
            raw = json.dumps(block["input"], ensure_ascii=False)
            for part in (raw[: len(raw) // 2], raw[len(raw) // 2 :]):
                delta = {"type": "input_json_delta", "partial_json": part}
                yield _sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}), 0.0
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": index}), 0.0
    yield (
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": message["usage"]["output_tokens"]},
            },
        ),
        0.0,
    )
    yield _sse("message_stop", {"type": "message_stop"}), 0.0


class _Handler(BaseHTTPRequestHandler):
    """HTTP/1.1 handler; ``model`` is bound to the owning ScriptedModelServer."""

    protocol_version = "HTTP/1.1"
    server_version = "ScriptedTestModel/1.0"
    model: ScriptedModelServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", "req_" + self.model._next_hex(24))
        if status == 529:
            self.send_header("x-should-retry", "true")
            self.send_header("retry-after-ms", "100")
        self.end_headers()
        self.wfile.write(data)

    def _not_found(self) -> None:
        self._json(
            404,
            {
                "type": "error",
                "error": {"type": "not_found_error", "message": f"scripted test model: no route {self.path}"},
            },
        )

    def _read_body(self) -> dict[str, Any] | None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self._json(
                400,
                {"type": "error", "error": {"type": "invalid_request_error", "message": "body is not a JSON object"}},
            )
            return None
        return body

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        self._not_found()

    do_PUT = do_DELETE = do_PATCH = do_GET  # noqa: N815

    def do_HEAD(self) -> None:  # noqa: N802 - stdlib name
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        route = self.path.split("?", 1)[0].rstrip("/")
        if route not in ("/v1/messages", "/v1/messages/count_tokens"):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._not_found()
            return
        body = self._read_body()
        if body is None:
            return
        if route.endswith("/count_tokens"):
            self._json(200, {"input_tokens": count_tokens(body)})
            return
        self.model.record(self.path, body)
        kind, blocks = self.model.planner(body.get("messages") or [])
        if self.model.should_fail(body, kind, blocks):
            self._json(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
            return
        message = self.model.build_message(body, blocks)
        if not body.get("stream"):
            if kind == "slow":
                time.sleep(self.model.slow_interval * SLOW_DELTAS)
            self._json(200, message)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("request-id", "req_" + self.model._next_hex(24))
        self.end_headers()
        try:
            for chunk, pause in stream_events(message, slow=kind == "slow"):
                if pause:
                    time.sleep(pause * self.model.slow_interval)
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m server.agent.scripted_api",
        description="Serve the scripted test model (a fake, deterministic Messages API) on 127.0.0.1.",
    )
    parser.add_argument("--port", type=int, default=0, help="port to bind (0 = pick a free one)")
    parser.add_argument("--log", type=Path, default=None, help="append each request as a JSON line here")
    args = parser.parse_args(argv)
    server = ScriptedModelServer(port=args.port, log_path=args.log)
    url = server.start()
    print(f"scripted test model listening on {url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


SCRIPTED_MODEL = "scripted-test-model"
SCRIPTED_KEY = "scripted-test-model-key"


def scripted_provider(model: str | None = None, base_url: str | None = None):  # type: ignore[no-untyped-def]
    """The product's `anthropic` provider pointed at a scripted test model on loopback."""
    from server.agent.providers.anthropic_api import AnthropicProvider

    assert base_url is not None, "start a ScriptedModelServer and pass its base_url"
    return AnthropicProvider(
        model=model or SCRIPTED_MODEL, api_key=SCRIPTED_KEY, base_url=base_url, max_retries=6, env={}
    )
