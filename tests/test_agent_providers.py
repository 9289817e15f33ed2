"""`run_turn` with each provider, through their one protocol: the `claude-cli` provider runs the whole
turn itself (the real CLI, offline against the scripted model); the `anthropic` provider answers the
loop's steps, and says itself whether a resumed session goes on with its model (`follows_session_model`),
not who made it or its name. As CLI 2.1.328: with nothing naming a model, the model that last answered
goes on; `model` or ANTHROPIC_MODEL skip the restore."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from realcli import find_claude, provider_env
from scripted_api import SCRIPTED_KEY, ScriptedModelServer, scripted_provider

from server.agent.events import TurnEvent
from server.agent.loop import run_turn
from server.agent.providers.choose import make_provider
from server.agent.request import TurnRequest
from storage.transcript import Transcript

LAST_MODEL = "claude-haiku-4-5"
"""Restored by the CLI, and not the provider's default (the CLI's, claude-opus-5-5)."""


@pytest.fixture
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(slow_interval=0.0) as server:
        yield server


def test_a_resumed_session_goes_on_with_its_model_unless_one_is_named(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    projects = tmp_path / "config" / "projects"
    first = run_turn(
        TurnRequest(prompt="hello", cwd=str(work), projects_dir=projects),
        provider=scripted_provider(model=LAST_MODEL, base_url=model.base_url),
    )
    key = {"ANTHROPIC_API_KEY": SCRIPTED_KEY}

    def resumed(env: dict[str, str], *, given_provider: bool = False, named: str | None = None) -> str:
        request = TurnRequest(
            prompt="again",
            session=first.session_id,
            projects_dir=projects,
            provider="anthropic",
            model=named,
            env=env,
            base_url=model.base_url,
        )
        provider = make_provider("anthropic", model=named, env=env, base_url=model.base_url) if given_provider else None
        run_turn(request, provider=provider)
        sent = model.requests[-1]["model"]
        assert isinstance(sent, str)
        return sent

    seen = {
        "chosen by the loop": resumed(key),
        "made once and passed in": resumed(key, given_provider=True),
        "ANTHROPIC_MODEL set": resumed({**key, "ANTHROPIC_MODEL": "claude-opus-4-6"}),
        "model asked for": resumed(key, named="claude-opus-4-5"),
    }
    print(seen)
    assert seen == {
        "chosen by the loop": LAST_MODEL,
        "made once and passed in": LAST_MODEL,
        "ANTHROPIC_MODEL set": "claude-opus-4-6",
        "model asked for": "claude-opus-4-5",
    }


@pytest.mark.realcli
def test_the_claude_cli_provider_runs_the_whole_turn(model: ScriptedModelServer, tmp_path: Path) -> None:
    """Chosen by name, the real CLI runs the turn and writes the transcript: the loop records nothing
    itself and relays the CLI's stream as events."""
    claude = find_claude()
    if claude is None:
        pytest.skip("REAL CLI NOT AVAILABLE: run scripts/setup.d/claude-cli.sh (or set SESSION_LSP_CLAUDE)")
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    projects = tmp_path / "config" / "projects"
    env = provider_env(claude, model.base_url, home, tmp_path / "tmp")
    events: list[TurnEvent] = []
    result = run_turn(
        TurnRequest(prompt="hello from the cli", cwd=str(work), projects_dir=projects, provider="claude-cli", env=env),
        on_event=events.append,
    )
    print(
        f"{len(model.requests)} model requests, {len(result.appended)} rows appended, events {[e.kind for e in events]}"
    )
    assert result.provider == "claude-cli"
    assert result.text == "echo: hello from the cli"
    lines = [json.loads(line) for line in Path(result.path).read_text().splitlines()]
    written_by = {row.get("version") for row in lines if row.get("uuid")}
    assert written_by == {"2.1.328"}, written_by
    chain = [r.uuid for r in Transcript.load(Path(result.path)).rows if r.is_chain_row]
    assert result.appended == chain and len(chain) >= 2
    assert any(e.kind == "text" for e in events) and events[-1].kind == "done"
