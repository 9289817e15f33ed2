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
    assert "3 session(s); problems: 0 error(s), 0 warning(s)" in out.stdout
    for title, sid in (
        ("Missing cent when splitting an invoice", "5b0e8c1a-3d7f-4a92-b6e4-1c9d2f7a8e35"),
        ("Audit money rounding before merge", "c7a41e96-0f28-4b3d-9e5a-62d8b1f4c09e"),
        ("Tax rounding half up (branch)", None),
    ):
        assert f"\n{title}\n  {sid or ''}" in out.stdout
    assert out.stdout.count("/home/dev/ledger  ") == 3
    assert "forked from c7a41e96-0f28-4b3d-9e5a-62d8b1f4c09e" in out.stdout
    assert "subagent " in out.stdout and "(general-purpose)" in out.stdout
    # the conversations as resume rebuilds them: the fix, the compaction summary, the subagent's report
    assert "$100.00 splits as $33.34 + $33.33 + $33.33" in out.stdout
    assert "This session is being continued from a previous conversation" in out.stdout
    assert "[tool call Edit " in out.stdout and "[tool call Bash " in out.stdout and "[tool call Agent " in out.stdout
    assert "ORACLE" not in out.stdout and "[scrubbed" not in out.stdout


def test_overview_falls_back_when_the_projects_folder_holds_no_session(tmp_path: Path) -> None:
    (tmp_path / ".claude" / "projects" / "-some-project").mkdir(parents=True)
    (tmp_path / ".claude" / "projects" / "-some-project" / "notes.txt").write_text("not a session")
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("CLAUDE_CONFIG_DIR", None)
    out = subprocess.run(
        [sys.executable, "-m", "server.cli", "overview"], capture_output=True, text=True, env=env, check=True
    )
    assert "projects holds no session: using the bundled example" in out.stdout
    assert "3 session(s); problems: 0 error(s)" in out.stdout


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
