"""The `cost-state` row a turn leaves: token counts and an estimated price, as the CLI keeps them."""

from __future__ import annotations

from typing import Any

from server.agent.events import Usage

# USD per million tokens: input, output, cache write (5 min), cache read.
PRICES: dict[str, tuple[float, float, float, float]] = {
    "opus": (15.0, 75.0, 18.75, 1.5),
    "sonnet": (3.0, 15.0, 3.75, 0.3),
    "haiku": (1.0, 5.0, 1.25, 0.1),
}


def price_of(model: str) -> tuple[float, float, float, float] | None:
    name = model.lower()
    return next((p for key, p in PRICES.items() if key in name), None)


def cost_state(
    model: str, usage: Usage, *, start_ms: int, duration_ms: int, api_ms: int, tool_ms: int
) -> dict[str, Any]:
    price = price_of(model)
    cost = 0.0
    if price:
        cost = (
            usage.input_tokens * price[0]
            + usage.output_tokens * price[1]
            + usage.cache_creation_input_tokens * price[2]
            + usage.cache_read_input_tokens * price[3]
        ) / 1e6
    return {
        "totalCostUSD": cost,
        "totalAPIDuration": api_ms,
        "totalAPIDurationWithoutRetries": api_ms,
        "totalToolDuration": tool_ms,
        "totalLinesAdded": 0,
        "totalLinesRemoved": 0,
        "totalDuration": duration_ms,
        "startTime": start_ms,
        "modelUsage": {
            model: {
                "inputTokens": usage.input_tokens,
                "outputTokens": usage.output_tokens,
                "cacheReadInputTokens": usage.cache_read_input_tokens,
                "cacheCreationInputTokens": usage.cache_creation_input_tokens,
                "webSearchRequests": 0,
                "costUSD": cost,
            }
        },
        "hasUnknownModelCost": price is None,
    }
