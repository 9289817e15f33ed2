"""Which model the CLI (2.1.332, the newest) continues a resumed session with, and whether it takes system messages.

Found by letting the real CLIs 2.1.328 and 2.1.332 resume files whose replies name different models
(tests/corpus/versions/models.json, tests/corpus/claude-code-2.1.332/oracles.json) and read in their bundled JS:

- The CLI looks at the chain's last reply that is not `isMeta` and names a model other than
  ``<synthetic>`` (``inPlaceOfModel`` wins over ``message.model``). It restores that model when it
  knows it and it is neither retired nor declined for the account; otherwise (and when there
  is no such reply) the session goes on with the CLI's default model. An earlier reply never
  stands in for a declined last one.
- Models older than Claude Opus 4.8 in the CLI's model order, and every Claude 3 model, get no
  `system` messages inside the conversation (its "mid-conversation system" capability): their
  system reminders go as user text and no effort carrier is sent. Every other model, unknown names
  included, takes them.

``--model`` and ``ANTHROPIC_MODEL`` (and the other model overrides) skip the restore; the form built
here is the one of a plain ``claude --resume``. Retirement is by date in the CLI: a model of its table is
retired from 00:00 UTC of its first-party retirement day on (``Date.parse(day + " UTC") < Date.now()``; within a
day of it the CLI takes local midnight, which we do not follow), so the
answer depends on the day (``on``, default today in UTC). 2.1.332's table adds claude-sonnet-4-5 (retired
2026-11-30), claude-3-5-sonnet (2025-10-28) and claude-opus-4-5 (2027-01-22) to 2.1.328's: 2.1.328 restored the
first two, 2.1.332 does not (tests/test_oracle_newest.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, date, datetime
from typing import Any

DEFAULT_MODEL = "claude-opus-5-5"
"""What 2.1.328 and 2.1.332 use with an API key when nothing else names a model."""
SYNTHETIC_MODEL = "<synthetic>"
MODEL_ORDER = (
    "claude-opus-4-0", "claude-sonnet-4-0", "claude-opus-4-1", "claude-sonnet-4-5", "claude-haiku-4-5",
    "claude-opus-4-5", "claude-opus-4-6", "claude-sonnet-4-6", "claude-opus-4-7", "claude-opus-4-8",
    "claude-mythos-5", "claude-fable-5", "claude-sonnet-5", "claude-opus-5", "claude-mythos-5-1",
    "claude-fable-5-1", "claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5", "claude-mythos-5-2",
    "claude-fable-5-2",
)  # fmt: skip
"""The CLI's model order, oldest first."""
FIRST_SYSTEM_MESSAGES = "claude-opus-4-8"
"""The oldest model in that order that takes system messages mid-conversation."""
KNOWN_ELSEWHERE = ("claude-3-5-sonnet",)
"""Known to the CLI's model knowledge outside its catalog (2.1.328 restored it; 2.1.332 has it retired)."""
REMAPPED = ("claude-opus-4-0", "claude-opus-4-1")
"""Remapped to the latest Opus for API-key accounts: never restored."""
RETIREMENT_DAYS = {
    "claude-3-5-sonnet": date(2025, 10, 28),
    "claude-3-opus": date(2026, 1, 5),
    "claude-3-7-sonnet": date(2026, 2, 19),
    "claude-3-5-haiku": date(2026, 2, 19),
    "claude-opus-4-0": date(2026, 6, 15),
    "claude-sonnet-4-0": date(2026, 6, 15),
    "claude-sonnet-4-5": date(2026, 11, 30),
    "claude-opus-4-5": date(2027, 1, 22),
}
"""2.1.332's first-party retirement days: from that day on (UTC) the model is not restored."""
NOT_ALLOWED_PREFIXES = ("claude-mythos-",)
"""In the catalog, but the real CLI did not restore claude-mythos-5 or claude-mythos-5-2 with an API
key (its code declines models the account's settings do not allow)."""
_ALIASES = {"claude-opus-4": "claude-opus-4-0", "claude-sonnet-4": "claude-sonnet-4-0"}
_DATE_SUFFIX = re.compile(r"-(?:\d{8}|latest)$")


def canonical(model: str) -> str:
    """The CLI's identity of a model name: lower case, no ``[1m]``, no date or ``-latest`` suffix."""
    name = model.strip().lower().replace("[1m]", "")
    name = _DATE_SUFFIX.sub("", name)
    return _ALIASES.get(name, name)


def today() -> date:
    """The day in UTC, which the CLI's retirement dates are compared with."""
    return datetime.now(UTC).date()


def is_retired(model: str, on: date | None = None) -> bool:
    """Whether the CLI takes `model` as retired on day `on` (default today): remapped, or past its retirement day."""
    name = canonical(model)
    retired_on = RETIREMENT_DAYS.get(name)
    return name in REMAPPED or (retired_on is not None and retired_on <= (on or today()))


def is_restored(model: str, on: date | None = None) -> bool:
    """Whether the CLI resumes a session whose last reply came from `model` with that model, on day `on`."""
    name = canonical(model)
    known = name in MODEL_ORDER or name in KNOWN_ELSEWHERE
    return known and not is_retired(name, on) and not name.startswith(NOT_ALLOWED_PREFIXES)


def supports_system_messages(model: str | None) -> bool:
    """Whether the CLI sends `system` messages inside the conversation to `model`."""
    if not model:
        return True
    name = canonical(model)
    if name.startswith("claude-3-"):
        return False
    if name in MODEL_ORDER:
        return MODEL_ORDER.index(name) >= MODEL_ORDER.index(FIRST_SYSTEM_MESSAGES)
    return True


def recorded_model(entries: Iterable[dict[str, Any]]) -> str | None:
    """The model the CLI weighs on resume: that of the last reply (in chain order) that is not
    `isMeta` and names a real model; None when there is none."""
    for entry in reversed(list(entries)):
        if entry.get("type") != "assistant" or entry.get("isMeta") is True:
            continue
        message = entry.get("message")
        model = message.get("model") if isinstance(message, dict) else None
        if not isinstance(model, str) or model == SYNTHETIC_MODEL:
            continue
        in_place = entry.get("inPlaceOfModel")
        return in_place if isinstance(in_place, str) else model
    return None


def continued_model(entries: Iterable[dict[str, Any]], default: str = DEFAULT_MODEL, on: date | None = None) -> str:
    """The model a plain ``claude --resume`` on day `on` (default today) goes on with, from the chain's rows."""
    recorded = recorded_model(entries)
    return recorded if recorded is not None and is_restored(recorded, on) else default
