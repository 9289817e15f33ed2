"""Files of CLIs before 2.1 (tests/corpus/versions): inline subagent rows, titles from summaries.

1.0.x kept a subagent's conversation in the main file (`isSidechain: true`, its own root): `check`
calls it a subagent sidechain (not a rewound branch) and the tree shows it as one.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import orjson
import pytest
from conftest import TESTS

from server.cli import main
from server.features.tree import TreeView
from storage.sessions import read_session_info
from storage.transcript import Transcript

ROOT = TESTS / "corpus" / "versions"
OLD = ROOT / "claude-code-1.0.128" / "projects" / "-tmp-slsp-versions-1-0-128-work"
WITH_AGENT = OLD / "10000003-0000-4000-8000-000000010128.jsonl"
COMPACTED = OLD / "10000001-0000-4000-8000-000000010128.jsonl"


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


WRITERS = ["0.2.109", "1.0.0", "1.0.51", "1.0.128", "2.0.0", "2.0.77", "2.1.0"]


@pytest.mark.parametrize("writer", WRITERS)
def test_every_old_corpus_checks_clean(writer: str, capsys: pytest.CaptureFixture[str]) -> None:
    """No error, warning nor rewound branch in what any old CLI wrote (all of it resumes in 2.1.328)."""
    projects = ROOT / f"claude-code-{writer}" / "projects"
    assert main(["check", "--projects-dir", str(projects), "--json"]) == 0
    diags = orjson.loads(capsys.readouterr().out)
    assert [d for d in diags if d["severity"] in ("error", "warning")] == []
    assert [d for d in diags if d["code"] == "unreachable-branch"] == []
    assert [d for d in diags if d["code"] == "session-id-mismatch"] == []  # 0.2.109's resumes, 2.1.0's fork


def _check_copy(tmp_path: Path, edit: str) -> None:
    """`check` of a copy of 0.2.109's resumed session 2994e4f5 (its first 8 rows carry two earlier sessions'
    ids): under its own name, under another name, or with a metadata row of another session added."""
    source = ROOT / "claude-code-0.2.109" / "projects" / "-tmp-slsp-versions-0-2-109-work"
    name = "2994e4f5-e496-49f5-87ae-9a79f986e6e4"
    folder = tmp_path / "projects" / "-w"
    folder.mkdir(parents=True)
    data = (source / f"{name}.jsonl").read_bytes()
    if edit == "renamed":
        name = "12345678-1234-4234-8234-123456789abc"
    if edit == "metadata":
        data += b'{"type":"tag","tag":"x","sessionId":"99999999-9999-4999-8999-999999999999"}\n'
    (folder / f"{name}.jsonl").write_bytes(data)
    assert main(["check", "--projects-dir", str(tmp_path / "projects"), "--json"]) == 0


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        ("none", []),
        ("renamed", [(1, "9f2bf1ed"), (5, "e4189df4"), (9, "2994e4f5")]),
        ("metadata", [(11, "99999999")]),
    ],
)
def test_rows_of_another_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: str, expected: list[tuple[int, str]]
) -> None:
    """Chain rows of another session are the CLI's own copying unless no row carries the file's id (a copy
    under another name); a metadata row of another session is always reported."""
    _check_copy(tmp_path, edit)
    diags = orjson.loads(capsys.readouterr().out)
    got = [(d["line"], d["message"].split("sessionId ")[1][:8]) for d in diags if d["code"] == "session-id-mismatch"]
    assert got == expected


@pytest.mark.parametrize("writer", ["1.0.128", "2.0.77"])
def test_old_corpora_check_without_branches(writer: str, capsys: pytest.CaptureFixture[str]) -> None:
    projects = ROOT / f"claude-code-{writer}" / "projects"
    assert main(["check", "--projects-dir", str(projects), "--json"]) == 0
    diags = orjson.loads(capsys.readouterr().out)
    notes = sorted((Path(d["path"]).stem[:8], d["line"]) for d in diags if d["code"] == "subagent-sidechain")
    if writer == "2.0.77":  # its subagents are in agent files
        assert notes == []
        return
    expected = []
    for path in (COMPACTED, WITH_AGENT):
        rows = _rows(path)
        roots = [i for i, r in enumerate(rows) if r.get("isSidechain") is True and r.get("parentUuid") is None]
        expected += [(path.stem[:8], i + 1) for i in roots]  # check prints 1-based lines
    assert notes == sorted(expected) and len(notes) == 2


def test_note_counts_the_subagents_rows(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(WITH_AGENT), "--json"]) == 0
    (note,) = [d for d in orjson.loads(capsys.readouterr().out) if d["code"] == "subagent-sidechain"]
    inline = [r for r in _rows(WITH_AGENT) if r.get("isSidechain") is True]
    assert note["message"].startswith(f"{len(inline)} row(s) from here are a subagent's conversation")


def test_tree_shows_the_inline_subagent() -> None:
    view = TreeView.of(Transcript.load(WITH_AGENT))
    tree = view.to_json()
    inline = [r["uuid"] for r in _rows(WITH_AGENT) if r.get("isSidechain") is True]
    assert len(inline) == 4
    marked = [n for n in tree["nodes"] if n["sidechain"]]
    assert [n["uuid"] for n in marked] == inline
    assert all(n["label"].startswith("subagent ") and not n["onChain"] for n in marked)
    assert all(not n["label"].startswith("subagent ") for n in tree["nodes"] if not n["sidechain"])
    call = next(
        r
        for r in _rows(WITH_AGENT)
        if r["type"] == "assistant"
        and not r.get("isSidechain")
        and r["message"]["content"][0]["type"] == "tool_use"
        and r["message"]["content"][0]["name"] == "Task"
    )
    assert tree["inlineSubagents"] == [
        {
            "rootUuid": inline[0],
            "uuids": inline,
            "toolUseId": call["message"]["content"][0]["id"],
            "callUuid": call["uuid"],
        }
    ]
    # the Task call and its result stay on the session's own chain
    on_chain = [n for n in tree["nodes"] if n["onChain"]]
    assert any(n["label"] == "assistant tool call" for n in on_chain)


def test_subagent_files_have_no_inline_subagents() -> None:
    agent = next(
        p for p in (ROOT / "claude-code-2.0.77" / "projects").glob("*/agent-*.jsonl") if "READ" in p.read_text()
    )
    tree = TreeView.of(Transcript.load(agent)).to_json()
    assert tree["inlineSubagents"] == [] and not any(n["sidechain"] for n in tree["nodes"])


def test_summary_on_the_leaf_titles_an_old_session(tmp_path: Path) -> None:
    """1.0.x wrote title summaries naming the leaf they summarised; on the chain's leaf, one titles
    the session (it has no last-prompt); on an earlier row, the first prompt does."""
    path = tmp_path / COMPACTED.name
    shutil.copy(COMPACTED, path)
    info = read_session_info(path)
    assert info.title == "hello"  # its summaries name earlier leaves
    leaf = [r for r in _rows(path) if r.get("type") in ("user", "assistant") and not r.get("isSidechain")][-1]
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"type": "summary", "summary": "Greeting and a compacted read", "leafUuid": leaf["uuid"]}))
        fh.write("\n")
    assert read_session_info(path).title == "Greeting and a compacted read"
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"type": "custom-title", "customTitle": "my name", "sessionId": path.stem}) + "\n")
    assert read_session_info(path).title == "my name"


def test_continue_skips_files_without_a_conversation(tmp_path: Path) -> None:
    """The newest file of a 1.0.x folder is a summary-only one: `--continue` (ours and the real
    CLI 2.1.328's) takes the newest session instead."""
    try:
        from realcli import find_claude, run_claude
    except ImportError:  # pragma: no cover - run from the repo root
        from tests.realcli import find_claude, run_claude
    from scripted_api import ScriptedModelServer

    from storage.lookup import find_continue

    projects = tmp_path / "config" / "projects"
    shutil.copytree(ROOT / "claude-code-1.0.128" / "projects", projects)
    folder = projects / OLD.name
    files = sorted(folder.glob("*.jsonl"))
    summary_only = [f for f in files if not read_session_info(f).has_messages]
    assert len(summary_only) == 5
    base = 1_700_000_000
    for i, f in enumerate(files):
        os.utime(f, (base + i, base + i))
    newest_session = folder / "10000002-0000-4000-8000-000000010128.jsonl"
    os.utime(newest_session, (base + 100, base + 100))
    os.utime(summary_only[0], (base + 200, base + 200))
    assert find_continue(projects, "/tmp/slsp-versions/1.0.128/work") == newest_session
    if find_claude() is None:
        pytest.skip("REAL CLI NOT AVAILABLE: run scripts/setup.d/claude-cli.sh (our half passed)")
    cwd = Path("/tmp/slsp-versions/1.0.128/work")
    cwd.mkdir(parents=True, exist_ok=True)
    with ScriptedModelServer(seed="continue-old") as model:
        done = run_claude(
            ["hi there", "--continue", "--system-prompt", "Be brief.", "--tools", "Read"],
            cwd=cwd, config_dir=projects.parent, base_url=model.base_url, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert [r["sessionId"] for r in model.requests] == [newest_session.stem]
