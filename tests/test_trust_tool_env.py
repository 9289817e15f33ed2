"""The commands a model runs do not see the provider's or the server's credentials.

A prompt injected through a file the model read could otherwise have Bash print `ANTHROPIC_API_KEY` into the
conversation (sent to the model) or send it anywhere. A whole turn against the scripted model, a real `bash`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from nobody import give, run_cli, shared_dir
from realcli import provider_env
from scripted_api import SCRIPTED_KEY, SCRIPTED_MODEL, ScriptedModelServer, scripted_provider
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


WALK_UP = (
    "p=$$; while [ \"$p\" -gt 1 ]; do echo \"== $p $(cat /proc/$p/comm)\"; tr '\\0' '\\n' < /proc/$p/environ 2>&1; "
    "p=$(sed -n 's/^PPid:[[:space:]]*//p' /proc/$p/status); done"
)
"""A command that prints the environment every process above it started with, up to init, as it can."""


@pytest.fixture
def shared() -> Iterator[Path]:
    yield from shared_dir()


def test_bash_cannot_read_the_credentials_from_the_processes_above_it(
    shared: Path, scripted_model: ScriptedModelServer
) -> None:
    """Removing the credentials from the command's environment is not enough: `/proc/<pid>/environ` of the
    process that runs the turn shows the environment it started with, to any process of its user. A real
    `session-lsp turn` as `nobody` (root reads every process's), its Bash walking up the process tree."""
    home, work = shared / "home", shared / "work"
    projects = home / ".claude" / "projects"
    projects.mkdir(parents=True)
    work.mkdir()
    give(home)
    give(work)
    token = "server-token-that-must-not-leak"
    env = {
        "ANTHROPIC_BASE_URL": scripted_model.base_url,
        "ANTHROPIC_API_KEY": SCRIPTED_KEY,
        "ANTHROPIC_MODEL": SCRIPTED_MODEL,
        "SESSION_LSP_TOKEN": token,
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
    }
    done = run_cli(
        ["turn", "--new", "--cwd", str(work), "--projects-dir", str(projects), "--provider", "anthropic"]
        + ["--allow", "Bash", "--json", f"BASH {WALK_UP}"],
        home,
        env,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    path = Path(json.loads(done.stdout)["path"])
    results = [
        str(block["content"])
        for r in rows(path)
        if r.get("type") == "user" and isinstance(r["message"]["content"], list)
        for block in r["message"]["content"]
        if block.get("type") == "tool_result"
    ]
    assert len(results) == 1
    out = results[0]
    assert out.count("== ") >= 3, out  # the walk went past the command and its supervisor
    assert "Permission denied" in out, out  # the turn's own process refused it
    for secret in (SCRIPTED_KEY, token):
        assert secret not in out, out


def tool_results(path: Path) -> list[str]:
    """The text of every tool result the transcript at `path` records."""
    return [
        str(block["content"])
        for r in rows(path)
        if r.get("type") == "user" and isinstance(r["message"]["content"], list)
        for block in r["message"]["content"]
        if block.get("type") == "tool_result"
    ]


def test_bash_runs_without_the_store_password(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README tells users to keep the session store's password in `PGPASSWORD` (libpq reads it): session-lsp's
    own secret, in the environment of the process that runs the turn. A whole turn, a real `bash` printing its
    environment."""
    work = tmp_path / "work"
    work.mkdir()
    password = "store-password-that-must-not-leak"
    monkeypatch.setenv("PGPASSWORD", password)
    with ScriptedModelServer() as model:
        request = TurnRequest(prompt="BASH env", projects_dir=tmp_path / "projects", cwd=str(work), tools=("Bash",))
        result = run_turn(request, on_event=lambda e: None, provider=scripted_provider(base_url=model.base_url))
        sent = str(model.requests)
    results = tool_results(result.path)
    assert len(results) == 1 and "PATH=" in results[0], results  # the command did run with an environment
    assert "PGPASSWORD=" not in results[0] and password not in results[0]  # before: PGPASSWORD=store-password-...
    assert password not in sent


def test_the_claude_cli_providers_bash_runs_without_the_store_password(
    claude: Path, scripted_model: ScriptedModelServer, tmp_path: Path
) -> None:
    """With the `claude-cli` provider the real CLI runs the turn and its own Bash, in the environment session-lsp
    gives it: the provider's credentials it needs, this server's secrets it does not. A real CLI 2.1.328 turn."""
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    password, token = "store-password-that-must-not-leak", "server-token-that-must-not-leak"
    env = provider_env(
        claude, scripted_model.base_url, home, tmp_path / "tmp", PGPASSWORD=password, SESSION_LSP_TOKEN=token
    )
    request = TurnRequest(
        prompt="BASH env",
        cwd=str(work),
        projects_dir=tmp_path / "config" / "projects",
        provider="claude-cli",
        tools=("Bash",),
        env=env,
    )
    result = run_turn(request, on_event=lambda e: None)
    results = tool_results(result.path)
    assert len(results) == 1 and "PATH=" in results[0], results  # the CLI's Bash did run
    assert token not in results[0]
    assert "PGPASSWORD=" not in results[0] and password not in results[0]  # before: PGPASSWORD=store-password-...
