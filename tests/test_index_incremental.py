"""The index follows appends (in any chunking, torn lines included), truncation, replacement, deletion."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest
from conftest import line_starts

from server.index import ProjectIndex
from server.index.filestate import FileState
from storage.transcript import Transcript

CORPUS = Path(__file__).resolve().parent / "corpus" / "claude-code-2.1.328" / "projects"
SHOP = "-Users-me-shop"
PAR = "11111111-1111-4111-8111-111111111111"


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    dest = tmp_path / "projects"
    shutil.copytree(CORPUS, dest)
    return dest


def snapshot(state: FileState) -> list[tuple]:
    t = state.transcript
    return [(r.line, r.offset, r.uuid, r.parent, r.type) for r in t.rows] + [
        ("nodes", len(t.nodes), len(t.duplicates), len(t.problems))
    ]


@pytest.mark.parametrize("seed", range(5))
def test_appends_in_random_chunks_equal_a_full_read(tmp_path: Path, seed: int) -> None:
    data = (CORPUS / SHOP / f"{PAR}.jsonl").read_bytes()
    data = data + data[:300]  # duplicates and a torn tail at the end
    path = tmp_path / f"{PAR}.jsonl"
    path.write_bytes(b"")
    state = FileState(path)
    rnd = random.Random(seed)
    pos = 0
    while pos < len(data):
        step = rnd.randint(1, 4000)
        with open(path, "ab") as fh:
            fh.write(data[pos : pos + step])
        pos += step
        state.refresh()
    full = Transcript.load(path)
    assert snapshot(state)[:-1] == [(r.line, r.offset, r.uuid, r.parent, r.type) for r in full.rows]
    assert len(state.transcript.nodes) == len(full.nodes)
    assert len(state.transcript.duplicates) == len(full.duplicates)
    assert state.torn is not None and state.torn.line == data.count(b"\n")
    starts = [0] + [i + 1 for i, b in enumerate(data) if b == 0x0A]
    assert line_starts(path, state.line_marks) == starts


def test_update_reads_only_appended_bytes_and_reports_changes(projects: Path) -> None:
    idx = ProjectIndex(projects)
    idx.scan()
    path = projects / SHOP / f"{PAR}.jsonl"
    state = idx.files[path]
    before = state.offset
    assert idx.update_file(path).changed == set()
    extra = b'{"type":"tag","tag":"x","sessionId":"%s"}\n' % PAR.encode()
    with open(path, "ab") as fh:
        fh.write(extra)
    changes = idx.update_file(path)
    assert changes.changed == {path} and changes.session_ids == {PAR}
    assert state.offset == before + len(extra) and idx.files[path] is state


def test_truncated_replaced_and_deleted_files(projects: Path) -> None:
    idx = ProjectIndex(projects)
    idx.scan()
    path = projects / SHOP / f"{PAR}.jsonl"
    data = path.read_bytes()
    n = len(idx.files[path].transcript.rows)
    lines = data.splitlines(keepends=True)
    with open(path, "r+b") as fh:
        fh.truncate(len(b"".join(lines[:10])))
    idx.update_file(path)
    assert len(idx.files[path].transcript.rows) == 10
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)  # a new inode
    idx.update_file(path)
    assert len(idx.files[path].transcript.rows) == n
    path.unlink()
    changes = idx.update_file(path)
    assert changes.removed == {path} and path not in idx.files
    assert idx.file_for_session(PAR) is None
    assert idx.find_uuid("739c1328-ea42-40d8-bf1f-4371b9e96e55")  # the fork still has it


def test_queries(projects: Path) -> None:
    idx = ProjectIndex(projects)
    idx.scan()
    main = projects / SHOP / f"{PAR}.jsonl"
    assert idx.file_for_session(PAR) == main
    hits = idx.find_uuid("739c1328-ea42-40d8-bf1f-4371b9e96e55")
    assert {p.stem for p, _ in hits} == {PAR, "d864acd2-d28b-43ce-b430-2208a10860fe"}
    kids = idx.children_of("739c1328-ea42-40d8-bf1f-4371b9e96e55")
    assert {r.uuid for _, r in kids} == {"3368cd25-73d7-4721-b576-a9d882139ec8"}
    assert len(kids) == 2
    sessions = idx.sessions()
    assert {s.session_id for s in sessions} >= {PAR, "22222222-2222-4222-8222-222222222222"}
    state = idx.files[main]
    assert state.line_count == 57 and line_starts(main, state.line_marks)[0] == 0
    assert idx.subagent_files(projects / SHOP / "22222222-2222-4222-8222-222222222222.jsonl")
