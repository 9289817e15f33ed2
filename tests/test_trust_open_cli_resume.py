"""A `claude-cli` turn writes into the session file we decided, admitted and locked, and into no other.

The provider resumed with `claude --resume <id>`. The real CLI 2.1.328 resumes an id from the project folder of the
cwd it runs in (else from another folder holding it), and appends there: the file of that id in the cwd's project
folder, not the one decided (found with the real CLI against the scripted model):

- a session file resumed by its path, with a `cwd` whose project folder holds another file of its id: the turn went
  into that other file, never admitted nor locked, and the decided file was left as it was;
- a session file copied into another project folder (its rows name the first folder's cwd), resumed by its path
  without `cwd`: the CLI ran in the recorded cwd and appended to the first folder's file;
- a session resumed by id with a `cwd` whose project folder has none: the CLI appended to the file we decided, but
  the turn's answer named a file of the cwd's folder that does not exist, and no appended row.

The CLI now resumes the decided file by its path (`claude_cli.resume_args`), which it appends to wherever it runs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from realcli import provider_env
from scripted_api import ScriptedModelServer

from server.agent.events import TurnResult
from server.agent.loop import run_turn
from server.agent.request import TurnRequest
from storage.paths import project_folder_name


@pytest.fixture
def place(tmp_path: Path) -> dict[str, Path]:
    for name in ("app", "checkout", "home"):
        (tmp_path / name).mkdir()
    return {
        "projects": tmp_path / "config" / "projects",
        "app": tmp_path / "app",
        "checkout": tmp_path / "checkout",
        "home": tmp_path / "home",
        "tmp": tmp_path,
    }


def _turn(claude: Path, model: ScriptedModelServer, place: dict[str, Path], prompt: str, **fields: str) -> TurnResult:
    env = provider_env(claude, model.base_url, place["home"], place["tmp"] / "cli-tmp")
    request = TurnRequest(prompt=prompt, projects_dir=place["projects"], provider="claude-cli", env=env)
    for name, value in fields.items():
        setattr(request, name, value)
    return run_turn(request, on_event=lambda e: None)


def _first(claude: Path, model: ScriptedModelServer, place: dict[str, Path]) -> Path:
    """A session the real CLI wrote in the app folder: its file."""
    out = _turn(claude, model, place, "hello", cwd=str(place["app"]), mode="new")
    path = Path(out.path)
    assert path.is_file() and path.parent.name == project_folder_name(str(place["app"]))
    return path


def _copy_into(place: dict[str, Path], path: Path, cwd: Path) -> Path:
    """A copy of the session file `path` in the project folder of `cwd` (synced, restored, planted)."""
    folder = place["projects"] / project_folder_name(str(cwd))
    folder.mkdir(exist_ok=True)
    return Path(shutil.copy(path, folder / path.name))


def test_a_resume_by_path_with_another_cwd_writes_the_decided_file(
    claude: Path, model: ScriptedModelServer, place: dict[str, Path]
) -> None:
    decided = _first(claude, model, place)
    other = _copy_into(place, decided, place["checkout"])
    untouched, before = other.read_bytes(), decided.stat().st_size
    out = _turn(claude, model, place, "go on", session=str(decided), cwd=str(place["checkout"]), mode="resume")
    assert other.read_bytes() == untouched  # before: the turn was appended to this file
    assert decided.stat().st_size > before and Path(out.path) == decided and out.appended
    assert "echo: go on" in decided.read_text()


def test_a_copy_resumed_without_cwd_writes_the_copy(
    claude: Path, model: ScriptedModelServer, place: dict[str, Path]
) -> None:
    original = _first(claude, model, place)
    copy = _copy_into(place, original, place["checkout"])  # its rows name the app folder as their cwd
    untouched, before = original.read_bytes(), copy.stat().st_size
    out = _turn(claude, model, place, "go on", session=str(copy), mode="resume")
    assert original.read_bytes() == untouched  # before: the CLI ran in the app folder and appended here
    assert copy.stat().st_size > before and Path(out.path) == copy


def test_a_resume_by_id_names_the_file_it_wrote(
    claude: Path, model: ScriptedModelServer, place: dict[str, Path]
) -> None:
    decided = _first(claude, model, place)
    before = decided.stat().st_size
    out = _turn(claude, model, place, "go on", session=decided.stem, cwd=str(place["checkout"]), mode="resume")
    assert decided.stat().st_size > before
    assert Path(out.path) == decided and out.appended  # before: the checkout's folder, []
    assert list(place["projects"].rglob("*.jsonl")) == [decided]
