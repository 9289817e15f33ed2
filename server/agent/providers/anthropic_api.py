"""The `anthropic` provider: the official SDK's streaming Messages API.

Honours ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) and ANTHROPIC_BASE_URL. Overloaded (529), rate
limits (429), 5xx and network failures are retried with backoff before anything has streamed;
everything else becomes a ProviderError whose message says what to do."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable, Mapping
from typing import Any

import anthropic

from server.agent.cancel import CancelToken
from server.agent.events import TurnEvent, TurnResult
from server.agent.providers.base import DEFAULT_MODEL, ModelRequest, ModelResponse, ProviderError, StepRunner
from server.agent.providers.unanswered import answer_or_cancel
from server.agent.request import TurnRequest

RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504, 529}
DEFAULT_RETRIES = 4


class AnthropicProvider:
    name = "anthropic"

    def __init__(
        self,
        *,
        model: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = DEFAULT_RETRIES,
        timeout: float = 600.0,
        env: Mapping[str, str] | None = None,
        label: str = "anthropic",
    ) -> None:
        env = os.environ if env is None else env
        key = api_key or env.get("ANTHROPIC_API_KEY")
        token = None if key else env.get("ANTHROPIC_AUTH_TOKEN")
        if not key and not token:
            raise ProviderError(
                "no API key: set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for a gateway), or use "
                "--provider claude-cli to run the turn through an installed `claude`",
                kind="no_key",
            )
        self.name = label
        named = model or env.get("ANTHROPIC_MODEL")
        self.model = named or DEFAULT_MODEL
        self.follows_session_model = not named
        """As the CLI: when nothing named a model, a resumed session goes on with its last reply's model."""
        self.base_url = base_url or env.get("ANTHROPIC_BASE_URL") or None
        self.max_retries = max_retries
        self.client = anthropic.Anthropic(
            api_key=key, auth_token=token, base_url=self.base_url, max_retries=0, timeout=timeout
        )

    def with_model(self, model: str) -> AnthropicProvider:
        other = copy.copy(self)
        other.model = model
        other.follows_session_model = False
        return other

    def run_turn(
        self,
        request: TurnRequest,
        *,
        steps: StepRunner,
        on_event: Callable[[TurnEvent], None],
        cancel: CancelToken,
    ) -> TurnResult:
        """The loop runs the turn; this provider answers its Messages-API steps."""
        return steps(self)

    def stream(
        self,
        request: ModelRequest,
        *,
        on_text: Callable[[str], None],
        cancel: CancelToken,
        on_retry: Callable[[int, str], None] | None = None,
    ) -> ModelResponse:
        retries: list[str] = []
        attempt = 0
        while True:
            cancel.check()
            acc = _Accumulator(on_text)
            try:
                self._stream_once(request, acc, cancel)
                response = acc.response(complete=not cancel.cancelled)
                response.retries = retries
                return response
            except anthropic.APIError as exc:
                if cancel.cancelled:
                    return acc.response(complete=False)
                error = _describe(exc, self.base_url)
                if not _retryable(exc) or acc.streamed or attempt >= self.max_retries:
                    raise error from exc
                attempt += 1
                retries.append(str(error))
                if on_retry:
                    on_retry(attempt, str(error))
                if cancel.wait(_delay(exc, attempt)):
                    cancel.check()
            except Exception:
                if cancel.cancelled:
                    return acc.response(complete=False)
                raise

    def _stream_once(self, request: ModelRequest, acc: _Accumulator, cancel: CancelToken) -> None:
        def call() -> Any:
            return self.client.messages.create(  # type: ignore[call-overload]  # plain JSON dicts, not TypedDicts
                model=self.model,
                max_tokens=request.max_tokens,
                system=request.system,
                messages=request.messages,
                tools=request.tools,
                metadata={"user_id": json.dumps({"session_id": request.session_id})},
                stream=True,
            )

        # the headers are waited for beside the turn: a cancel before they come ends the wait (`unanswered`)
        stream = answer_or_cancel(call, cancel, lambda late: late.response.close())
        if stream is None:
            return
        unregister = cancel.on_cancel(stream.response.close)
        try:
            for event in stream:
                if cancel.cancelled:
                    break
                acc.feed(event.model_dump(exclude_none=True))
        finally:
            unregister()
            stream.response.close()


class _Accumulator:
    """Builds the assistant message from raw stream events; counts finished blocks."""

    def __init__(self, on_text: Callable[[str], None]) -> None:
        self.on_text = on_text
        self.message: dict[str, Any] = {}
        self.blocks: dict[int, dict[str, Any]] = {}
        self.json_parts: dict[int, list[str]] = {}
        self.finished: set[int] = set()
        self.streamed = False

    def feed(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "message_start":
            self.message = dict(event.get("message") or {})
        elif kind == "content_block_start":
            index = event["index"]
            block = dict(event.get("content_block") or {})
            self.blocks[index] = {"type": block.pop("type", "text"), **block}
            if self.blocks[index].get("type") in ("tool_use", "server_tool_use"):
                self.json_parts[index] = []
        elif kind == "content_block_delta":
            self._delta(event["index"], event.get("delta") or {})
        elif kind == "content_block_stop":
            index = event["index"]
            block = self.blocks.get(index, {})
            if index in self.json_parts:
                raw = "".join(self.json_parts.pop(index))
                try:
                    block["input"] = json.loads(raw) if raw else {}
                except ValueError:
                    block["input"] = {"_unparsed": raw}
            self.finished.add(index)
        elif kind == "message_delta":
            delta = event.get("delta") or {}
            for key in ("stop_reason", "stop_sequence"):
                if key in delta:
                    self.message[key] = delta[key]
            usage = dict(self.message.get("usage") or {})
            usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
            self.message["usage"] = usage
        elif kind == "error":
            raise ProviderError(f"stream error: {event.get('error')}")

    def _delta(self, index: int, delta: dict[str, Any]) -> None:
        block = self.blocks.setdefault(index, {"type": "text", "text": ""})
        dtype = delta.get("type")
        if dtype == "text_delta":
            text = delta.get("text", "")
            block["text"] = block.get("text", "") + text
            if text:
                self.streamed = True
                self.on_text(text)
        elif dtype == "input_json_delta":
            self.json_parts.setdefault(index, []).append(delta.get("partial_json", ""))
            self.streamed = True
        elif dtype == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta.get("thinking", "")
        elif dtype == "signature_delta":
            block["signature"] = delta.get("signature", "")

    def response(self, *, complete: bool) -> ModelResponse:
        indexes = sorted(self.blocks) if complete else sorted(self.finished)
        message = {
            "id": self.message.get("id"),
            "type": "message",
            "role": "assistant",
            "model": self.message.get("model"),
            "content": [self.blocks[i] for i in indexes],
            "stop_reason": self.message.get("stop_reason") if complete else None,
            "stop_sequence": self.message.get("stop_sequence"),
            "usage": self.message.get("usage") or {},
        }
        return ModelResponse(message, complete=complete)


def _retryable(exc: anthropic.APIError) -> bool:
    if isinstance(exc, anthropic.APIConnectionError):
        return True
    return isinstance(exc, anthropic.APIStatusError) and exc.status_code in RETRYABLE_STATUS


def _delay(exc: anthropic.APIError, attempt: int) -> float:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    try:
        if headers.get("retry-after-ms"):
            return min(float(headers["retry-after-ms"]) / 1000, 60.0)
        if headers.get("retry-after"):
            return min(float(headers["retry-after"]), 60.0)
    except ValueError:
        pass
    return min(0.5 * 2.0 ** (attempt - 1), 16.0)


def _describe(exc: anthropic.APIError, base_url: str | None) -> ProviderError:
    where = base_url or "https://api.anthropic.com"
    if isinstance(exc, anthropic.APIConnectionError):
        return ProviderError(f"cannot reach the Messages API at {where} (network down?): {exc}", kind="network")
    if isinstance(exc, anthropic.AuthenticationError):
        return ProviderError("the API key was rejected (401): check ANTHROPIC_API_KEY", kind="bad_key")
    if isinstance(exc, anthropic.PermissionDeniedError):
        return ProviderError(f"the API key may not use this model or endpoint (403): {_message(exc)}", kind="bad_key")
    if isinstance(exc, anthropic.NotFoundError):
        return ProviderError(
            f"not found (404) at {where}: {_message(exc)} (wrong --model or base URL?)", kind="not_found"
        )
    if isinstance(exc, anthropic.APIStatusError):
        if exc.status_code == 529:
            return ProviderError("the API is overloaded (529); try again in a moment", kind="overloaded")
        if exc.status_code == 429:
            return ProviderError(f"rate limited (429): {_message(exc)}", kind="overloaded")
        if exc.status_code == 400:
            return ProviderError(f"the API refused the request (400): {_message(exc)}", kind="bad_request")
        return ProviderError(f"API error {exc.status_code}: {_message(exc)}")
    return ProviderError(f"API error: {exc}")


def _message(exc: anthropic.APIStatusError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    err = found if isinstance(found := body.get("error"), dict) else {}
    return str(err.get("message") or exc.message)
