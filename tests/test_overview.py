"""The main job of the quick start: `session-lsp overview` on the bundled example."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_overview_uses_bundled_example_without_claude_home(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("CLAUDE_CONFIG_DIR", None)
    out = subprocess.run(
        [sys.executable, "-m", "server.cli", "overview"], capture_output=True, text=True, env=env, check=True
    )
    assert "using the bundled example" in out.stdout
    assert "4 session(s); problems: 0 error(s), 0 warning(s)" in out.stdout
    for sid in (
        "11111111-1111-4111-8111-111111111111",
        "22222222-2222-4222-8222-222222222222",
        "d864acd2-d28b-43ce-b430-2208a10860fe",
        "1c99f271-c426-49f7-9ae1-2b8728ab22c4",
    ):
        assert f"echo: ORACLE {sid}" in out.stdout


def test_overview_falls_back_when_the_projects_folder_holds_no_session(tmp_path: Path) -> None:
    (tmp_path / ".claude" / "projects" / "-some-project").mkdir(parents=True)
    (tmp_path / ".claude" / "projects" / "-some-project" / "notes.txt").write_text("not a session")
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("CLAUDE_CONFIG_DIR", None)
    out = subprocess.run(
        [sys.executable, "-m", "server.cli", "overview"], capture_output=True, text=True, env=env, check=True
    )
    assert "projects holds no session: using the bundled example" in out.stdout
    assert "4 session(s)" in out.stdout


def test_overview_reports_problems_with_their_line(corpus_projects: Path) -> None:
    path = corpus_projects / "-Users-me-shop/11111111-1111-4111-8111-111111111111.jsonl"
    lines = path.read_text().split("\n")
    lines.insert(29, "{garbage")
    path.write_text("\n".join(lines))
    out = subprocess.run(
        [sys.executable, "-m", "server.cli", "overview", "--projects-dir", str(corpus_projects)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert f"error: {path}:30: [invalid-json]" in out.stdout
    assert "problems: 1 error(s)" in out.stdout
