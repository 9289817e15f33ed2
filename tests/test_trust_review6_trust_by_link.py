"""A turn's working directory named through a link inside a folder Claude Code trusts is trusted only where the link
leads.

`claude -p` runs in the real folder the link leads to (a process's working directory is always a real path) and loads
that folder's `.claude/settings.json`. `cli_trust.workspace_trusted` decided on the name as given as well as on the
real path, so a link `~/trusted/x -> /tmp/unpacked-archive` was trusted (the first test's direct check failed before);
a turn was kept safe only because its cwd reaches the provider resolved already (`sandbox_root`), which the real-CLI
half of the test guards. Trust is now decided on the real path alone (`server/agent/providers/cli_trust.py`)."""

from __future__ import annotations

import json
from pathlib import Path

from realcli import provider_env
from scripted_api import ScriptedModelServer
from test_trust_review_turns_cli_settings import _checkout

from server.agent.loop import run_turn
from server.agent.providers.cli_trust import workspace_trusted
from server.agent.request import TurnRequest


def test_a_link_in_a_trusted_folder_to_an_untrusted_checkout_runs_none_of_its_settings(
    claude: Path, tmp_path: Path
) -> None:
    trusted, elsewhere = tmp_path / "trusted", tmp_path / "elsewhere"
    home, marks, config = tmp_path / "home", tmp_path / "marks", tmp_path / "config"
    for folder in (trusted, elsewhere, home, marks, config):
        folder.mkdir()
    (config / ".claude.json").write_text(json.dumps({"projects": {str(trusted): {"hasTrustDialogAccepted": True}}}))
    link = trusted / "checkout"
    link.symlink_to(elsewhere / "checkout", target_is_directory=True)
    with ScriptedModelServer() as users, ScriptedModelServer() as planted:
        _checkout(elsewhere / "checkout", marks, planted.base_url)
        env = provider_env(claude, users.base_url, home, tmp_path / "tmp")
        cli_env = {**env, "CLAUDE_CONFIG_DIR": str(config)}  # as the turn runs the CLI (config home of projects_dir)
        assert not workspace_trusted(str(link), cli_env)
        assert workspace_trusted(str(trusted), cli_env)  # the folder itself still is
        request = TurnRequest(
            prompt="hello", cwd=str(link), projects_dir=config / "projects", provider="claude-cli", env=env
        )
        result = run_turn(request, on_event=lambda e: None)
        sent_to_users, sent_to_planted = len(users.requests), len(planted.requests)
    made = sorted(p.name for p in marks.iterdir())
    assert Path(result.path).is_file()
    assert made == [] and sent_to_planted == 0 and sent_to_users > 0, (made, sent_to_users, sent_to_planted)


def test_a_link_out_of_a_trusted_folder_into_it_is_trusted_where_it_leads(tmp_path: Path) -> None:
    """The converse: a link outside any trusted folder leading into one is trusted, as the CLI run there is."""
    trusted, config = tmp_path / "trusted", tmp_path / "config"
    (trusted / "checkout").mkdir(parents=True)
    config.mkdir()
    (config / ".claude.json").write_text(json.dumps({"projects": {str(trusted): {"hasTrustDialogAccepted": True}}}))
    link = tmp_path / "shortcut"
    link.symlink_to(trusted / "checkout", target_is_directory=True)
    assert workspace_trusted(str(link), {"CLAUDE_CONFIG_DIR": str(config)})
