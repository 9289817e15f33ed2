"""What a turn reports while it runs, and what it returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

EventKind = Literal["session", "text", "tool_call", "tool_result", "permission", "retry", "done"]


@dataclass(frozen=True)
class TurnEvent:
    """One progress report: `kind` plus a JSON-ready `data` dict.

    - session: {sessionId, path, resumed}
    - text: {text} (a streamed delta of the reply)
    - tool_call: {id, name, input}
    - tool_result: {id, name, isError, content} (content cut to 2,000 characters)
    - permission: {id, name, decision} (allow, allowSession or deny; cancelled: the turn was cancelled while asked)
    - retry: {attempt, error}
    - done: the TurnResult JSON plus {stopReason, cancelled}
    """

    kind: EventKind
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, **self.data}


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def add(self, usage: dict[str, Any] | None) -> None:
        for key in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
            value = (usage or {}).get(key)
            if isinstance(value, int):
                setattr(self, key, getattr(self, key) + value)

    def to_json(self) -> dict[str, int]:
        return {
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "cacheCreationInputTokens": self.cache_creation_input_tokens,
            "cacheReadInputTokens": self.cache_read_input_tokens,
        }


@dataclass
class TurnResult:
    session_id: str
    path: str
    appended: list[str] = field(default_factory=list)
    """uuids of the chain rows this turn wrote, in order."""
    text: str = ""
    """The assistant's text, all responses of the turn joined by blank lines."""
    usage: Usage = field(default_factory=Usage)
    stop_reason: str | None = None
    cancelled: bool = False
    provider: str = ""
    model: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "path": self.path,
            "appended": list(self.appended),
            "text": self.text,
            "usage": self.usage.to_json(),
            "stopReason": self.stop_reason,
            "cancelled": self.cancelled,
            "provider": self.provider,
            "model": self.model,
        }
