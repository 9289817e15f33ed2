"""The `scripted` provider: the scripted test model (NOT a real model) served on loopback,
reached through the same `anthropic` SDK path, so a whole turn runs offline."""

from __future__ import annotations

import atexit
import threading

from server.agent.providers.anthropic_api import AnthropicProvider
from server.agent.scripted_api import ScriptedModelServer

SCRIPTED_MODEL = "scripted-test-model"
_lock = threading.Lock()
_server: ScriptedModelServer | None = None


def shared_server() -> ScriptedModelServer:
    """One scripted test model per process, started on first use and stopped at exit."""
    global _server
    with _lock:
        if _server is None:
            _server = ScriptedModelServer()
            _server.start()
            atexit.register(_server.stop)
        return _server


def scripted_provider(model: str | None = None, base_url: str | None = None) -> AnthropicProvider:
    url = base_url or shared_server().base_url
    return AnthropicProvider(
        model=model or SCRIPTED_MODEL,
        api_key="scripted-test-model-key",
        base_url=url,
        max_retries=6,
        env={},
        label="scripted",
    )
