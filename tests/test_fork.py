"""Forks of real CLI sessions (both kinds) resume to the source's conversation; the source is
not touched; the CLI commands print what they made."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TESTS

from storage.fork import ForkError, fork_session
from storage.resume import resume
from storage.transcript import Transcript

GENERATED = TESTS / "corpus" / "generated" / "projects"
ORIGINAL = TESTS / "corpus" / "claude-code-2.1.328" / "projects"


def _copy(src: Path, tmp: Path) -> Path:
    dest = tmp / "projects"
    shutil.copytree(src, dest)
    return dest


def _sessions(root: Path) -> list[Path]:
    return sorted(root.glob("*/*.jsonl"))


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("root", [ORIGINAL, GENERATED], ids=["corpus", "generated"])
def test_fork_both_kinds_give_the_same_conversation(root: Path, tmp_path: Path) -> None:
    projects = _copy(root, tmp_path)
    for source in _sessions(projects):
        before = _digest(source)
        src = resume(source)
        sid, path = fork_session(source, source.parent.parent)
        assert path.parent == source.parent and path.stem == sid
        same = resume(path)
        assert same.messages == src.messages
        assert same.chain.uuids == src.chain.uuids  # --fork-session keeps the uuids
        assert {r.session_id for r in Transcript.load(path).rows if r.session_id} == {sid}
        sid2, path2 = fork_session(source, source.parent.parent, at_uuid=src.chain.leaf.uuid, title="forked")  # type: ignore[union-attr]
        fresh = resume(path2)
        assert fresh.messages == src.messages
        assert not set(fresh.chain.uuids) & set(src.chain.uuids)  # fresh uuids
        assert all(r.forked_from and r.forked_from[0] == src.session_id for r in fresh.chain.rows if r.is_chain_row)
        assert _digest(source) == before, "the source must not be touched"
        assert path.stat().st_mode & 0o777 == 0o600


def test_fork_at_a_middle_message(tmp_path: Path) -> None:
    projects = _copy(ORIGINAL, tmp_path)
    source = projects / "-Users-me-shop" / "11111111-1111-4111-8111-111111111111.jsonl"
    src = resume(source)
    users = [r for r in src.chain.rows if r.type == "user" and not r.tool_result_ids]
    at = users[1]
    sid, path = fork_session(source, source.parent.parent, at_uuid=at.uuid)
    fork = resume(path)
    assert len(fork.chain.rows) < len(src.chain.rows)
    assert fork.chain.rows[-1].forked_from == (src.session_id, at.uuid)
    assert fork.messages[-1] == {"role": "assistant", "content": [{"type": "text", "text": "No response requested."}]}
    with pytest.raises(ForkError):
        fork_session(source, source.parent.parent, at_uuid="00000000-0000-4000-8000-000000000000")


def test_fork_of_session_with_subagent_and_its_own_fork(tmp_path: Path) -> None:
    projects = _copy(GENERATED, tmp_path)
    for source in _sessions(projects):
        src = resume(source)
        sid, path = fork_session(source, source.parent.parent)
        sid3, path3 = fork_session(path, path.parent.parent)  # a fork of a fork
        assert resume(path3).messages == src.messages


def test_cli_fork_rename_tag(tmp_path: Path) -> None:
    projects = _copy(ORIGINAL, tmp_path)
    run = [sys.executable, "-m", "server.cli"]
    out = subprocess.run(
        [
            *run,
            "fork",
            "11111111-1111-4111-8111-111111111111",
            "--title",
            "T1",
            "--projects-dir",
            str(projects),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    made = json.loads(out.stdout)
    assert set(made) == {"sessionId", "path"} and Path(made["path"]).is_file()
    subprocess.run([*run, "rename", made["sessionId"], "T2", "--projects-dir", str(projects)], check=True)
    subprocess.run([*run, "tag", "T2", "urgent", "--projects-dir", str(projects)], check=True)
    tail = [json.loads(x) for x in Path(made["path"]).read_text().splitlines()[-2:]]
    assert tail == [
        {"type": "custom-title", "customTitle": "T2", "sessionId": made["sessionId"]},
        {"type": "tag", "tag": "urgent", "sessionId": made["sessionId"]},
    ]
