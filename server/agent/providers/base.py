"""The model-provider interface the loop talks to, and the errors providers raise."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from server.agent.cancel import CancelToken
from storage.errors import SessionLspError

DEFAULT_MODEL = "claude-sonnet-4-5"
DEFAULT_MAX_TOKENS = 16_000


class ProviderError(SessionLspError):
    """A model call failed for good (after retries); the message is for the person at the editor."""

    reason = "provider"

    def __init__(self, message: str, *, kind: str = "error") -> None:
        super().__init__(message)
        self.kind = kind
        """no_key, bad_key, overloaded, network, not_found, bad_request, error."""

    def details(self) -> dict[str, Any]:
        return {"kind": self.kind}


@dataclass
class ModelRequest:
    system: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    session_id: str
    max_tokens: int = DEFAULT_MAX_TOKENS


@dataclass
class ModelResponse:
    """The assistant message as the Messages API returns it (`id`, `model`, `content`, `usage`...).

    When cancelled mid-stream, `complete` is False and `content` holds only finished blocks."""

    message: dict[str, Any]
    complete: bool = True
    retries: list[str] = field(default_factory=list)


class ModelProvider(Protocol):
    name: str
    model: str

    def stream(
        self,
        request: ModelRequest,
        *,
        on_text: Callable[[str], None],
        cancel: CancelToken,
        on_retry: Callable[[int, str], None] | None = None,
    ) -> ModelResponse: ...
