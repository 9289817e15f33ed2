"""Diagnostics that must be right: a real `--fork-session` copy of a session that ran a subagent,
a preserved segment after a rewind, links that stay inside their project folder."""

from __future__ import annotations

import json
import shutil
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from conftest import TESTS
from scripted_api import ScriptedModelServer

from server.index import ProjectIndex

try:
    from realcli import find_claude, run_claude
except ImportError:  # pragma: no cover
    from tests.realcli import find_claude, run_claude

GENERATED = TESTS / "corpus" / "generated" / "projects" / "-tmp-slsp-corpus-shop"
S2 = "22222222-2222-4222-8222-222222222222"
AGENT = "acaf812ebc0d12099"
FLAGS = ["--bare", "--system-prompt", "You are driven by a scripted test model. Be brief.", "--tools", "Read,Agent"]


def real_fork_of_s2(tmp_path: Path) -> tuple[Path, Path]:
    """(projects folder, the fork) after the real CLI ran `--resume S2 --fork-session`."""
    claude = find_claude()
    if claude is None:
        print("\nREAL CLI NOT AVAILABLE: fork diagnostics SKIPPED", file=sys.stderr)
        pytest.skip("REAL CLI NOT AVAILABLE: run scripts/setup.d/claude-cli.sh")
    shop = Path("/tmp/slsp-corpus/shop")
    shop.mkdir(parents=True, exist_ok=True)
    config = tmp_path / "config"
    shutil.copytree(GENERATED, config / "projects" / GENERATED.name)
    before = set((config / "projects" / GENERATED.name).glob("*.jsonl"))
    with ScriptedModelServer() as model:
        done = run_claude(["hello from the fork", "--resume", S2, "--fork-session", *FLAGS], cwd=shop,
                          config_dir=config, base_url=model.base_url, timeout=120, claude=claude, allowed_tools=None)  # fmt: skip
    assert done.returncode == 0, done.stderr
    (fork,) = set((config / "projects" / GENERATED.name).glob("*.jsonl")) - before
    return config / "projects", fork


def test_fork_session_copy_finds_its_sources_subagent(tmp_path: Path) -> None:
    projects, fork = real_fork_of_s2(tmp_path)
    assert not (fork.with_suffix("") / "subagents").exists()  # the CLI leaves the subagent with its source
    assert f'"agentId":"{AGENT}"'.encode() in fork.read_bytes()
    idx = ProjectIndex(projects)
    idx.scan()
    assert [d.code for d in idx.diagnostics(fork) if d.severity in ("error", "warning")] == []
    from server.index.parallel import check_folder

    diags, _ = check_folder(projects, workers=2)
    assert [(d.path.name, d.code) for d in diags if d.code == "missing-subagent"] == []


def _row(kind: str, uid: str, parent: str | None, text: str = "", **extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"parentUuid": parent, "type": kind, "uuid": uid, "timestamp": "2025-01-01T00:00:00.000Z"}
    if kind in ("user", "assistant"):
        content = text if kind == "user" else [{"type": "text", "text": text}]
        row["message"] = {"role": kind, "content": content}
    row.update(extra)
    return row


def test_rows_resume_puts_back_are_never_unreachable(tmp_path: Path) -> None:
    """A compaction after a rewind: the preserved segment is on the rewound-to branch, the
    boundary's logical parent before it. Resume puts the segment on its chain."""
    sid = "88888888-8888-4888-8888-888888888888"
    path = tmp_path / "projects" / "-p" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True)
    boundary = _row("system", "b0", None, subtype="compact_boundary", logicalParentUuid="a1",
                    compactMetadata={"trigger": "manual", "preTokens": 100,
                                     "preservedSegment": {"headUuid": "u3", "anchorUuid": "s0", "tailUuid": "a3"}})  # fmt: skip
    rows = [
        _row("user", "u1", None, "first"),
        _row("assistant", "a1", "u1", "one"),
        _row("user", "u2", "a1", "abandoned"),
        _row("assistant", "a2", "u2", "abandoned reply"),
        _row("user", "u3", "a1", "after the rewind"),
        _row("assistant", "a3", "u3", "kept reply"),
        boundary,
        _row("user", "s0", "b0", "summary of the conversation", isCompactSummary=True),
        _row("user", "u4", "s0", "go on"),
        _row("assistant", "a4", "u4", "going on"),
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    from storage.resume import resume

    assert {"u3", "a3"} <= set(resume(path).chain.uuids)
    idx = ProjectIndex(tmp_path / "projects")
    idx.scan()
    found = [(d.line, d.code, d.message.split(" ")[0]) for d in idx.diagnostics(path)]
    assert found == [(2, "unreachable-branch", "2")]


def test_parent_in_another_project_is_not_a_link(tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    mine = projects / "-a" / f"{uuid.UUID(int=1)}.jsonl"
    theirs = projects / "-b" / f"{uuid.UUID(int=2)}.jsonl"
    same = projects / "-a" / f"{uuid.UUID(int=3)}.jsonl"
    for p in (mine, theirs):
        p.parent.mkdir(parents=True, exist_ok=True)
    theirs.write_text(json.dumps(_row("user", "t1", None, "theirs")) + "\n")
    mine.write_text(
        json.dumps(_row("user", "m1", None, "mine")) + "\n" + json.dumps(_row("assistant", "m2", "t1")) + "\n"
    )
    idx = ProjectIndex(projects)
    idx.scan()
    assert [(d.line, d.code, d.severity) for d in idx.diagnostics(mine)] == [(1, "dangling-parent", "warning")]
    same.write_text(json.dumps(_row("user", "t1", None, "a copy in my folder")) + "\n")
    idx.update_file(same)
    diags = idx.diagnostics(mine)
    assert [(d.line, d.code, d.severity) for d in diags] == [(1, "cross-file-parent", "warning")]
    assert [(r.path, r.line) for r in diags[0].related] == [(same, 0)]
