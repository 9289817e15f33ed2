"""Session listing: titles, counts (also through the persistent count cache), forks, subagents."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from storage.sessions import list_sessions, read_session_info


def _count_rows(path: Path) -> int:
    n = 0
    for line in path.read_text().splitlines():
        if line.strip():
            try:
                if json.loads(line).get("type") in ("user", "assistant"):
                    n += 1
            except json.JSONDecodeError:
                pass
    return n


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("SESSION_LSP_NO_CACHE", raising=False)


def test_list_corpus(corpus_projects: Path) -> None:
    sessions = list_sessions(corpus_projects)
    assert len(sessions) == 4
    by_id = {s.session_id: s for s in sessions}
    named = by_id["1c99f271-c426-49f7-9ae1-2b8728ab22c4"]
    assert named.title == "named session" and named.cwd == "/Users/me/other"
    for s in sessions:
        assert s.message_count == _count_rows(s.path)
        assert s.created and s.created.endswith("Z")
    assert by_id["22222222-2222-4222-8222-222222222222"].subagents[0]["agentType"] == "general-purpose"
    assert [s.modified_ts for s in sessions] == sorted((s.modified_ts for s in sessions), reverse=True)


def test_counts_follow_appends_truncation_and_replacement(corpus_projects: Path, tmp_path: Path) -> None:
    path = corpus_projects / "-Users-me-shop/11111111-1111-4111-8111-111111111111.jsonl"
    first = list_sessions(corpus_projects)
    assert (tmp_path / "cache/session-lsp/message-counts-v3.json").exists()
    before = next(s for s in first if s.path == path).message_count
    row = b'{"parentUuid":null,"type":"user","uuid":"x1","message":{"role":"user","content":"more"}}\n'
    with open(path, "ab") as fh:
        fh.write(row + row.replace(b"x1", b"x2")[:-1])  # one whole line, one unfinished
    again = {s.path: s.message_count for s in list_sessions(corpus_projects)}
    assert again[path] == before + 2
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])  # shrank: counted again
    assert {s.path: s.message_count for s in list_sessions(corpus_projects)}[path] == _count_rows(path)


def test_title_order(tmp_path: Path) -> None:
    p = tmp_path / "p" / "d" / "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa.jsonl"
    p.parent.mkdir(parents=True)
    rows = [
        {
            "parentUuid": None,
            "type": "user",
            "uuid": "u0",
            "message": {"role": "user", "content": "<command-name>/x</command-name>"},
        },
        {"parentUuid": "u0", "type": "user", "uuid": "u1", "message": {"role": "user", "content": "first real prompt"}},
        {"type": "summary", "summary": "a summary", "leafUuid": "u1"},
    ]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    # no last-prompt (a file of a CLI before 2.1): the summary on the chain's leaf titles it
    assert read_session_info(p).title == "a summary"
    with open(p, "a") as fh:
        fh.write(json.dumps({"type": "last-prompt", "lastPrompt": "the last prompt", "leafUuid": "u1"}) + "\n")
    assert read_session_info(p).title == "the last prompt"
    with open(p, "a") as fh:
        fh.write(json.dumps({"type": "ai-title", "aiTitle": "AI title"}) + "\n")
    assert read_session_info(p).title == "AI title"
    with open(p, "a") as fh:
        fh.write(json.dumps({"type": "custom-title", "customTitle": "Custom " + "x" * 300}) + "\n")
    title = read_session_info(p).title
    assert title.startswith("Custom x") and len(title) == 200


def test_list_json_and_errors(corpus_projects: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "server.cli", "list", "--projects-dir", str(corpus_projects), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    data = json.loads(out.stdout)
    keys = {
        "sessionId",
        "path",
        "projectDir",
        "cwd",
        "title",
        "created",
        "modified",
        "messageCount",
        "leafUuid",
        "forkedFrom",
        "subagents",
    }
    assert all(keys <= set(d) for d in data) and len(data) == 4
    bad = subprocess.run(
        [sys.executable, "-m", "server.cli", "list", "--projects-dir", "/no/such/dir"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "does not exist" in bad.stderr
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "server.cli",
            "chain",
            "99999999-9999-4999-8999-999999999999",
            "--projects-dir",
            str(corpus_projects),
        ],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "no session" in bad.stderr
    notes = corpus_projects / "notes.jsonl"
    notes.write_text('{"hello": 1}\n')
    bad = subprocess.run(
        [sys.executable, "-m", "server.cli", "chain", str(notes), "--projects-dir", str(corpus_projects)],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "not a Claude Code transcript" in bad.stderr


def test_fork_session_copies_are_linked_to_their_source(corpus_projects: Path, tmp_path: Path) -> None:
    import shutil as _sh

    from server.features.requests import SessionRequests
    from server.index import ProjectIndex

    by_id = {s.session_id: s for s in list_sessions(corpus_projects)}
    assert by_id["d864acd2-d28b-43ce-b430-2208a10860fe"].forked_from == {
        "sessionId": "11111111-1111-4111-8111-111111111111",
        "messageUuid": None,
    }
    assert by_id["11111111-1111-4111-8111-111111111111"].forked_from is None
    # a fork made after a compaction starts at the boundary: the index finds its source
    gen = tmp_path / "gen"
    _sh.copytree(Path(__file__).parent / "corpus" / "generated" / "projects", gen)
    idx = ProjectIndex(gen)
    idx.scan()
    listed = SessionRequests(gen, find_uuids=idx.homes_many).list({})["sessions"]
    forks = {s["sessionId"]: s["forkedFrom"] for s in listed if s["forkedFrom"]}
    assert list(forks.values()) == [{"sessionId": "11111111-1111-4111-8111-111111111111", "messageUuid": None}]


def test_legacy_flat_agent_files_are_listed_with_their_session(corpus_projects: Path) -> None:
    folder = corpus_projects / "-Users-me-other"
    sid = "1c99f271-c426-49f7-9ae1-2b8728ab22c4"
    (folder / "agent-1a2b3c4d.jsonl").write_text(
        json.dumps(
            {
                "parentUuid": None,
                "isSidechain": True,
                "type": "user",
                "uuid": "x1",
                "sessionId": sid,
                "agentId": "1a2b3c4d",
                "message": {"role": "user", "content": "sub task"},
            }
        )
        + "\n"
    )
    info = next(s for s in list_sessions(corpus_projects) if s.session_id == sid)
    assert [a["agentId"] for a in info.subagents] == ["1a2b3c4d"]
    assert len(list_sessions(corpus_projects)) == 4  # not a session of its own


def test_legacy_flat_agent_files_are_listed_once_when_the_index_lists_again(corpus_projects: Path) -> None:
    from storage.indexedlist import list_sessions_indexed

    folder = corpus_projects / "-Users-me-other"
    sid = "1c99f271-c426-49f7-9ae1-2b8728ab22c4"
    row = {"parentUuid": None, "type": "user", "uuid": "x1", "sessionId": sid, "message": {"content": "sub task"}}
    (folder / "agent-1a2b3c4d.jsonl").write_text(json.dumps(row) + "\n")
    hour_ago = time.time() - 3600  # settled: the second listing takes the stored summary
    for p in corpus_projects.rglob("*.jsonl"):
        os.utime(p, (hour_ago, hour_ago))
    runs = [list_sessions_indexed(corpus_projects) for _ in range(3)]
    for listed in runs:
        info = next(s for s in listed if s.session_id == sid)
        assert [a["agentId"] for a in info.subagents] == ["1a2b3c4d"]
