"""Per-million-token prices of the Claude models, and the cost of one API response.

Figures as of 2026-11-30 (`PRICES_DATE`). Source: the model catalog baked into the Claude Code CLI
2.1.328 (its `pricing_tiers` and each model's `pricing` tier, the table the CLI itself bills its
`cost-state` rows with), which restates Anthropic's published API prices: input, output, cache
write for the 5-minute and the 1-hour lifetime, cache read, and $0.01 per web search. The fast-mode
rows are the CLI's own fast prices for the models that have one. The Claude 3 Opus, Sonnet and Haiku
rows, which that catalog no longer lists, are Anthropic's published prices for those models.

How a response is priced follows the CLI: cache writes of the 1-hour lifetime (the row's
`usage.cache_creation.ephemeral_1h_input_tokens`) at the 1-hour rate, the rest of
`cache_creation_input_tokens` at the 5-minute rate; a model with long-prompt prices uses them when
the prompt (input + cache read + cache write) is above its threshold; `inference_geo: "us"` costs
1.1 times the token price; `speed: "fast"` uses the fast prices where the model has them.
A model not in this table has no price: its cost is None, never zero.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

PRICES_DATE = "2026-11-30"
PRICES_SOURCE = "Claude Code CLI 2.1.328 model catalog (Anthropic's published API prices)"
US_INFERENCE_FACTOR = 1.1
WEB_SEARCH_USD = 0.01


@dataclass(frozen=True, slots=True)
class Rates:
    """USD per million tokens; `long_prompt` applies above `long_prompt_above` prompt tokens."""

    input: float
    output: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float
    long_prompt: Rates | None = None
    long_prompt_above: int = 0


def _tier(inp: float, out: float, w5m: float, w1h: float, read: float) -> Rates:
    return Rates(inp, out, w5m, w1h, read)


TIERS: dict[str, Rates] = {
    "tier_2_10": _tier(2, 10, 2.5, 4, 0.2),
    "tier_2_10_cache_read_0_10": _tier(2, 10, 2.5, 4, 0.1),
    "tier_3_15": _tier(3, 15, 3.75, 6, 0.3),
    "tier_5_25": _tier(5, 25, 6.25, 10, 0.5),
    "tier_15_75": _tier(15, 75, 18.75, 30, 1.5),
    "tier_10_50": _tier(10, 50, 12.5, 20, 1),
    "tier_10_50_cache_read_0_25": _tier(10, 50, 12.5, 20, 0.25),
    "tier_4_20_cache_read_0_20": _tier(4, 20, 5, 8, 0.2),
    "tier_8_40_cache_read_0_20": _tier(8, 40, 10, 16, 0.2),
    "haiku_35": _tier(0.8, 4, 1, 1.6, 0.08),
    "haiku_45": _tier(1, 5, 1.25, 2, 0.1),
    "haiku_55": Rates(0.1, 0.5, 0.125, 0.2, 0.01, _tier(0.5, 2.5, 0.625, 1, 0.05), 100_000),
    # Claude 3 models, from Anthropic's published prices (not in the CLI 2.1.328 catalog).
    "claude_3_opus": _tier(15, 75, 18.75, 30, 1.5),
    "claude_3_haiku": _tier(0.25, 1.25, 0.3, 0.5, 0.03),
}

MODEL_TIERS: dict[str, str] = {
    "claude-3-haiku": "claude_3_haiku",
    "claude-3-opus": "claude_3_opus",
    "claude-3-sonnet": "tier_3_15",
    "claude-3-5-haiku": "haiku_35",
    "claude-3-5-sonnet": "tier_3_15",
    "claude-3-7-sonnet": "tier_3_15",
    "claude-haiku-4-5": "haiku_45",
    "claude-haiku-5-5": "haiku_55",
    "claude-sonnet-4-0": "tier_3_15",
    "claude-sonnet-4-5": "tier_3_15",
    "claude-sonnet-4-6": "tier_3_15",
    "claude-sonnet-5": "tier_2_10",
    "claude-sonnet-5-5": "tier_2_10_cache_read_0_10",
    "claude-opus-4-0": "tier_15_75",
    "claude-opus-4-1": "tier_15_75",
    "claude-opus-4-5": "tier_5_25",
    "claude-opus-4-6": "tier_5_25",
    "claude-opus-4-7": "tier_5_25",
    "claude-opus-4-8": "tier_5_25",
    "claude-opus-5": "tier_5_25",
    "claude-opus-5-5": "tier_4_20_cache_read_0_20",
    "claude-fable-5": "tier_10_50",
    "claude-fable-5-1": "tier_10_50_cache_read_0_25",
    "claude-fable-5-2": "tier_8_40_cache_read_0_20",
    "claude-mythos-5": "tier_10_50",
    "claude-mythos-5-1": "tier_10_50_cache_read_0_25",
    "claude-mythos-5-2": "tier_8_40_cache_read_0_20",
}

FAST_RATES: dict[str, Rates] = {
    "claude-opus-4-6": _tier(30, 150, 37.5, 60, 3),
    "claude-opus-4-7": _tier(30, 150, 37.5, 60, 3),
    "claude-opus-4-8": _tier(10, 50, 12.5, 20, 1),
    "claude-opus-5": _tier(10, 50, 12.5, 20, 1),
    "claude-opus-5-5": _tier(8, 40, 10, 16, 0.4),
    "claude-fable-5-2": _tier(16, 80, 20, 32, 0.4),
    "claude-mythos-5-2": _tier(16, 80, 20, 32, 0.4),
}

ALIASES = {"claude-opus-4": "claude-opus-4-0", "claude-sonnet-4": "claude-sonnet-4-0"}
_PROVIDER_PREFIX = re.compile(r"^(?:[a-z]{2,6}\.)?anthropic[./]")
_SUFFIXES = (
    re.compile(r"\[1m\]$"),
    re.compile(r"-v\d+(?::\d+)?$"),
    re.compile(r"[@-]\d{8}$"),
    re.compile(r"-latest$"),
)


def canonical_model(model: str) -> str:
    """The catalog id of a model name: provider prefixes, date and version suffixes removed."""
    name = _PROVIDER_PREFIX.sub("", model.strip().lower())
    for suffix in _SUFFIXES:
        name = suffix.sub("", name)
    return ALIASES.get(name, name)


@lru_cache(maxsize=512)
def rates_for(model: str, speed: str | None = None) -> Rates | None:
    """The prices of `model` (fast ones when `speed` is "fast" and the model has them), or None."""
    name = canonical_model(model)
    if speed == "fast" and name in FAST_RATES:
        return FAST_RATES[name]
    tier = MODEL_TIERS.get(name)
    return TIERS[tier] if tier is not None else None


def _int(value: Any) -> int:
    return value if value.__class__ is int and value > 0 else 0


def one_hour_writes(usage: dict[str, Any]) -> int:
    """Cache-write tokens of the 1-hour lifetime, bounded by the response's cache writes."""
    detail = usage.get("cache_creation")
    one_hour = _int(detail.get("ephemeral_1h_input_tokens")) if isinstance(detail, dict) else 0
    return min(one_hour, _int(usage.get("cache_creation_input_tokens")))


def response_cost(model: str, usage: dict[str, Any]) -> float | None:
    """USD of one response's `message.usage`, or None when the model has no known price."""
    speed = usage.get("speed")
    rates = rates_for(model, speed if isinstance(speed, str) else None)
    if rates is None:
        return None
    inp = _int(usage.get("input_tokens"))
    read = _int(usage.get("cache_read_input_tokens"))
    writes = _int(usage.get("cache_creation_input_tokens"))
    if rates.long_prompt is not None and inp + read + writes > rates.long_prompt_above:
        rates = rates.long_prompt
    one_hour = one_hour_writes(usage)
    tokens = (
        inp * rates.input
        + _int(usage.get("output_tokens")) * rates.output
        + read * rates.cache_read
        + one_hour * rates.cache_write_1h
        + (writes - one_hour) * rates.cache_write_5m
    ) / 1_000_000
    if usage.get("inference_geo") == "us":
        tokens *= US_INFERENCE_FACTOR
    server = usage.get("server_tool_use")
    searches = _int(server.get("web_search_requests")) if isinstance(server, dict) else 0
    return tokens + searches * WEB_SEARCH_USD
