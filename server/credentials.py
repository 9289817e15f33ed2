"""The names of the credentials in this process's environment that nothing it starts may be given.

A module of its own, light enough for the start of `serve` (`server.index.prefill` starts its child before the
server loads).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

SERVER_SECRETS = frozenset({"PGPASSWORD", "SESSION_LSP_TOKEN"})
"""This server's own secrets: its token, and the session store's password (`PGPASSWORD`, where the README says to
keep it). No command has a use for them, nor the `claude-cli` provider's CLI and the tools it runs."""

SECRET_NAMES = (
    frozenset(
        {
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "ANTHROPIC_BASE_URL",
            "ANTHROPIC_CUSTOM_HEADERS",
            "CLAUDE_CODE_OAUTH_TOKEN",
        }
    )
    | SERVER_SECRETS
)
"""Credentials of the model provider and of this server (a gateway's address may carry `user:password@`, its
custom headers a key): a command the model runs has no use for them, and a prompt injected through a file it
read could send them away. What the process started with stays out of reach too (`server/agent/tools/concealed.py`)."""


def without_credentials(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`env` (default: this process's environment) less `SECRET_NAMES`."""
    env = os.environ if env is None else env
    return {name: value for name, value in env.items() if name not in SECRET_NAMES}
