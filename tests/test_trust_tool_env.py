"""The commands a model runs do not see the provider's or the server's credentials.

A prompt injected through a file the model read could otherwise have Bash print `ANTHROPIC_API_KEY` into the
conversation (sent to the model) or send it anywhere. A whole turn against the scripted model, a real `bash`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scripted_api import ScriptedModelServer, scripted_provider
from test_agent_support import rows

from server.agent.loop import run_turn
from server.agent.request import TurnRequest
from server.agent.tools.base import SECRET_NAMES


def test_bash_runs_without_the_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    secrets = {name: f"secret-{i}-of-{name.lower()}" for i, name in enumerate(sorted(SECRET_NAMES))}
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SOMETHING_ELSE", "kept-for-the-command")
    model = ScriptedModelServer()
    model.start()
    try:
        request = TurnRequest(prompt="BASH env", projects_dir=tmp_path / "projects", cwd=str(work), tools=("Bash",))
        result = run_turn(request, on_event=lambda e: None, provider=scripted_provider(base_url=model.base_url))
    finally:
        model.stop()
    results = [
        block
        for r in rows(result.path)
        if r.get("type") == "user" and isinstance(r["message"]["content"], list)
        for block in r["message"]["content"]
        if block.get("type") == "tool_result"
    ]
    assert len(results) == 1
    out = str(results[0]["content"])
    assert "SOMETHING_ELSE=kept-for-the-command" in out and "PATH=" in out  # the command did run with an env
    for name, value in secrets.items():
        assert value not in out and f"{name}=" not in out, name
    sent = str(model.requests)
    assert not any(value in sent for value in secrets.values())
