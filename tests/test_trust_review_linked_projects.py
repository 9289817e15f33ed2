"""One writer per session when the projects folder is a symlink (`~/.claude/projects` kept on another disk): a
`rename` or `tag` during a turn must be refused as it is with a plain folder. The turn takes its lock in the config
home of the projects folder as given (`<config>/session-lsp/locks`); `rename` and `tag` took theirs in the parent
of the session file's *real* project folder (`<disk>/session-lsp/locks`, made there), and looked for live CLI
processes in `<disk>/sessions`: both were admitted into one session, with the default projects folder, and a
title went into a session a turn was writing."""

from __future__ import annotations

import json
from pathlib import Path

from turnproc import TurnProcess, new_session, refused_while_held, session_lsp


def test_rename_and_tag_are_refused_while_a_turn_holds_a_linked_projects_folder(
    tmp_path: Path, work: Path, marker: str
) -> None:
    config, disk = tmp_path / "config", tmp_path / "disk"
    (disk / "projects").mkdir(parents=True)
    config.mkdir()
    projects = config / "projects"
    projects.symlink_to(disk / "projects")
    sid, path = new_session(projects, work)
    holder = TurnProcess(projects, work, f"BASH sleep 600; echo {marker} holding", "--resume", sid, "--allow", "Bash")
    refused_while_held(holder, sid, path, config=config)  # the default projects folder: $CLAUDE_CONFIG_DIR/projects
    assert not (disk / "session-lsp").exists(), "a lock folder was made beside the real projects folder"
    done = session_lsp("rename", sid, "TITLE AFTER", config=config)
    assert done.returncode == 0, done.stderr
    titles = [json.loads(line).get("customTitle") for line in path.read_text().splitlines()]
    assert titles[-1] == "TITLE AFTER"
