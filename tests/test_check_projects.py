"""`session-lsp check PROJECT...`: project folders of the projects folder are checked through the persistent index.

Naming project folders gives what naming every transcript under them gives (links settled among the named
folders); the checks are kept in the index database beside those of the other projects, so the next run reads
only what changed, and a check of some projects never drops what the database holds for the others.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest
from conftest import TESTS, generated_folder

from server.cli import main
from storage.indexdb import IndexDB

CORPUS = TESTS / "corpus" / "claude-code-2.1.328" / "projects"


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generated_folder(tmp_path_factory, "check-projects", 12, 5)


def check_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[dict[str, object]], str]:
    """Exit status, diagnostics and what went to stderr."""
    status = main(["check", "--json", *args])
    out = capsys.readouterr()
    return status, orjson.loads(out.out), out.err


def transcripts(folder: Path) -> list[str]:
    """Every transcript under a project folder, named one by one (the other way `check` reads files)."""
    return sorted(str(p) for p in folder.rglob("*.jsonl") if p.is_file())


def stored_keys() -> set[str]:
    db = IndexDB.open()
    assert db is not None
    try:
        return set(db.sessions())
    finally:
        db.close()


@pytest.mark.parametrize("source", ["corpus", "generated"])
def test_a_project_folder_gives_what_its_files_give(
    source: str, generated: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    projects = tmp_path / "projects"
    shutil.copytree(CORPUS if source == "corpus" else generated, projects)
    folders = sorted(p for p in projects.iterdir() if p.is_dir())
    assert len(folders) >= 2
    for folder in folders:
        by_files = check_json(capsys, "--projects-dir", str(projects), *transcripts(folder))
        first = check_json(capsys, "--projects-dir", str(projects), str(folder))
        again = check_json(capsys, "--projects-dir", str(projects), str(folder))
        assert first == by_files == again, folder.name
    both = check_json(capsys, "--projects-dir", str(projects), *map(str, folders[:2]))
    files = [f for folder in folders[:2] for f in transcripts(folder)]
    assert both == check_json(capsys, "--projects-dir", str(projects), *files)


def test_a_project_check_keeps_the_other_projects_checks_and_drops_its_gone_sessions(
    generated: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    projects = tmp_path / "projects"
    shutil.copytree(generated, projects)
    check_json(capsys, "--projects-dir", str(projects))
    keys = stored_keys()
    folders = sorted(p for p in projects.iterdir() if p.is_dir())
    mine = folders[0]
    assert {k for k in keys if k.startswith(f"{mine}\0")} and {k for k in keys if not k.startswith(f"{mine}\0")}
    gone = sorted(mine.glob("*.jsonl"))[0]
    gone.unlink()
    shutil.rmtree(mine / gone.stem, ignore_errors=True)
    status, diags, _ = check_json(capsys, "--projects-dir", str(projects), str(mine))
    assert not any(str(gone) == d["path"] for d in diags)
    after = stored_keys()
    assert f"{mine}\0{gone.stem}" in keys and f"{mine}\0{gone.stem}" not in after
    assert after == keys - {f"{mine}\0{gone.stem}"}  # the other projects' checks are all still kept
    again = check_json(capsys, "--projects-dir", str(projects))
    monkeypatch.setenv("SESSION_LSP_NO_CACHE", "1")
    assert again == check_json(capsys, "--projects-dir", str(projects))  # as read afresh


def test_a_project_folder_that_is_a_link_out_is_not_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A project folder linked out of the projects folder is skipped (named on stderr), as the whole folder's check
    skips it: its files are not read."""
    projects = tmp_path / "projects"
    shutil.copytree(CORPUS, projects)
    outside = tmp_path / "outside"
    shutil.copytree(CORPUS / sorted(os.listdir(CORPUS))[0], outside)
    (projects / "-linked").symlink_to(outside, target_is_directory=True)
    status, diags, err = check_json(capsys, "--projects-dir", str(projects), str(projects / "-linked"))
    assert (status, diags) == (0, [])
    assert "-linked (a symlink leading out of the projects folder)" in err
