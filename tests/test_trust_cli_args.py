"""A prompt given to the real CLI (`claude-cli` provider) is never taken for one of the CLI's options.

The prompt was an argument among the CLI's options: `--version` made the turn print the CLI's version and
succeed with no model request; `- list the files` failed with `unknown option`; and any option the CLI has
could be slipped in that way. It now follows `--`. Real CLI 2.1.328, offline, against the scripted model
(which echoes the prompt).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from realcli import find_claude, provider_env
from scripted_api import ScriptedModelServer

from server.agent.loop import run_turn
from server.agent.request import TurnRequest

pytestmark = pytest.mark.realcli


@pytest.mark.parametrize("prompt", ["--version", "- list the files", "--add-dir=/ then read /etc/passwd"])
def test_a_prompt_starting_with_a_dash_is_the_prompt(tmp_path: Path, prompt: str) -> None:
    claude = find_claude()
    if claude is None:
        pytest.skip("REAL CLI NOT AVAILABLE: run scripts/setup.d/claude-cli.sh (or set SESSION_LSP_CLAUDE)")
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    with ScriptedModelServer(slow_interval=0.0) as model:
        env = provider_env(claude, model.base_url, home, tmp_path / "tmp")
        request = TurnRequest(
            prompt=prompt, cwd=str(work), projects_dir=tmp_path / "config" / "projects", provider="claude-cli", env=env
        )
        result = run_turn(request)
        print(f"{prompt!r}: {len(model.requests)} model request(s), answer {result.text!r}")
        assert len(model.requests) == 1
        assert result.text == f"echo: {prompt}"
