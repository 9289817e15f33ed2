"""A `claude-cli` turn's file tools stay inside its working directory, as the `anthropic` provider's do.

The provider allowed the CLI's file tools by their bare names (`--allowedTools Read,Glob,Grep,LS`, and `Edit`,
`Write` with `--allow`). To the real CLI a bare rule allows the tool on every path: a read-only turn's Read gave the
model `~/.ssh/id_rsa` (a prompt injected through any file it read could ask for it), Glob listed folders above, and
an allowed Write made files outside. Found with the real CLI 2.1.328 against the scripted model: before, the key in
the transcript and `outside.txt` made. The rules are now scoped to the working directory (`Read(./**)`, ...): inside
it the tools work as before, outside the CLI refuses (print mode does not ask).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from realcli import provider_env
from scripted_api import ScriptedModelServer
from test_trust_tool_env import tool_results

from server.agent.loop import run_turn
from server.agent.request import TurnRequest

KEY = "PRIVATE-KEY-NOT-FOR-THE-MODEL"


@pytest.fixture
def place(tmp_path: Path) -> dict[str, Path]:
    work, home = tmp_path / "work", tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(KEY)
    work.mkdir()
    (work / "notes.md").write_text("INSIDE-NOTES")
    return {"work": work, "home": home, "tmp": tmp_path}


def _turn(claude: Path, model: ScriptedModelServer, place: dict[str, Path], prompt: str, *tools: str) -> list[str]:
    """One `claude-cli` turn in the working directory; the tool results it recorded."""
    env = provider_env(claude, model.base_url, place["home"], place["tmp"] / "cli-tmp")
    request = TurnRequest(
        prompt=prompt,
        cwd=str(place["work"]),
        projects_dir=place["tmp"] / "config" / "projects",
        provider="claude-cli",
        tools=tools,
        env=env,
    )
    return tool_results(run_turn(request, on_event=lambda e: None).path)


def test_a_read_only_turn_reads_nothing_outside(
    claude: Path, model: ScriptedModelServer, place: dict[str, Path]
) -> None:
    outside = _turn(claude, model, place, f"READ {place['home'] / '.ssh' / 'id_rsa'}")
    assert len(outside) == 1 and KEY not in outside[0], outside  # before: "1\tPRIVATE-KEY-NOT-FOR-THE-MODEL"
    listed = _turn(claude, model, place, f"GLOB {place['home']}/**/*")
    assert len(listed) == 1 and "id_rsa" not in listed[0], listed  # before: the key's path
    inside = _turn(claude, model, place, f"READ {place['work'] / 'notes.md'}")
    assert len(inside) == 1 and "INSIDE-NOTES" in inside[0], inside


def test_an_allowed_write_makes_nothing_outside(
    claude: Path, model: ScriptedModelServer, place: dict[str, Path]
) -> None:
    _turn(claude, model, place, f"WRITE {place['tmp'] / 'outside.txt'} x", "Write")
    _turn(claude, model, place, "WRITE ../outside2.txt x", "Write")
    assert not (place["tmp"] / "outside.txt").exists() and not (place["tmp"] / "outside2.txt").exists()
    _turn(claude, model, place, f"WRITE {place['work'] / 'made.txt'} inside", "Write")
    assert (place["work"] / "made.txt").read_text() == "inside"
