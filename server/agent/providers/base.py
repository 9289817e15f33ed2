"""The model-provider interface the loop talks to, and the errors providers raise.

Every provider is a `ModelProvider`: it runs a turn. One that runs the whole turn itself (the
`claude-cli` provider: the CLI records the transcript) does so; one that answers Messages-API steps
(`anthropic`) is a `StepModel` and hands itself to the loop's own step runner. The loop therefore
never asks which class or name a provider has."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from server.agent.cancel import CancelToken
from server.agent.events import TurnEvent, TurnResult
from server.agent.request import TurnRequest
from storage.errors import SessionLspError
from storage.models import DEFAULT_MODEL as DEFAULT_MODEL  # a turn nothing names a model for starts as the CLI does

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


class StepModel(Protocol):
    """A model that answers one Messages-API step at a time; the loop runs the turn around it."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def follows_session_model(self) -> bool:
        """Whether a resumed session goes on with the model that last answered in it (as the CLI does
        when nothing named a model) rather than with `model`."""
        ...

    def with_model(self, model: str) -> StepModel:
        """The same provider (key, endpoint, retries) answering with `model`."""
        ...

    def stream(
        self,
        request: ModelRequest,
        *,
        on_text: Callable[[str], None],
        cancel: CancelToken,
        on_retry: Callable[[int, str], None] | None = None,
    ) -> ModelResponse: ...


StepRunner = Callable[[StepModel], TurnResult]
"""The loop's own turn of Messages-API steps, with the model that answers them."""


class ModelProvider(Protocol):
    """What `make_provider` returns and `run_turn` accepts."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...

    def run_turn(
        self,
        request: TurnRequest,
        *,
        steps: StepRunner,
        on_event: Callable[[TurnEvent], None],
        cancel: CancelToken,
    ) -> TurnResult:
        """Run one turn: by itself, or by handing itself as the `StepModel` to `steps`."""
        ...
