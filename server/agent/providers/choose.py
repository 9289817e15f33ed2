"""Choosing the provider: `anthropic` when ANTHROPIC_API_KEY is set, else `claude-cli` when
`claude` is on the PATH, else an error that explains both.

A provider's module is imported only when that provider is made: the SDK is not imported for `claude-cli`."""

from __future__ import annotations

import os
from collections.abc import Mapping

from server.agent.providers.base import ModelProvider, ProviderError
from server.agent.providers.claude_cli import NAME as CLAUDE_CLI
from server.agent.providers.claude_cli import ClaudeCliProvider, find_claude_binary

PROVIDERS = ("anthropic", CLAUDE_CLI)


def default_provider_name(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    if env.get("ANTHROPIC_API_KEY") or env.get("ANTHROPIC_AUTH_TOKEN"):
        return "anthropic"
    if find_claude_binary(env):
        return CLAUDE_CLI
    raise ProviderError(
        "no model provider available: set ANTHROPIC_API_KEY to use the Anthropic API (provider "
        "`anthropic`, ANTHROPIC_BASE_URL for a gateway), or install Claude Code so `claude` is on the "
        "PATH (provider `claude-cli`, uses your Claude Code login).",
        kind="no_key",
    )


def make_provider(
    name: str | None, *, model: str | None = None, env: Mapping[str, str] | None = None, base_url: str | None = None
) -> ModelProvider:
    """The provider `name` (None: `default_provider_name`); a `model` of None lets it choose (and, for
    `anthropic`, follow a resumed session's model as the CLI does)."""
    chosen = name or default_provider_name(env)
    if chosen == "anthropic":
        from server.agent.providers.anthropic_api import AnthropicProvider

        return AnthropicProvider(model=model, env=env, base_url=base_url)
    if chosen == CLAUDE_CLI:
        return ClaudeCliProvider(model=model, env=env)
    raise ProviderError(f"unknown provider {chosen!r}; choose one of {', '.join(PROVIDERS)}", kind="error")
