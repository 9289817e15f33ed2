"""Usage totals kept in the index database: `list --json` sums a session again only when one of its files
(the session file or a subagent file) changed, and then gives what a fresh read gives."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from storage.indexdb import DB_NAME
from storage.sessions import list_sessions
from storage.usage import session_usage_json, sessions_usage_json
from storage.usagetotals import sessions_usage_indexed

CORPUS = Path(__file__).resolve().parent / "corpus" / "claude-code-2.1.328" / "projects"
SHOP = "-Users-me-shop"
PARENT = "22222222-2222-4222-8222-222222222222"
SUBAGENT = Path(SHOP) / PARENT / "subagents" / "agent-a88b3ce23b875db07.jsonl"
HOUR_AGO = time.time() - 3600


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("SESSION_LSP_NO_CACHE", raising=False)
    return tmp_path / "cache" / "session-lsp"


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    dest = tmp_path / "projects"
    shutil.copytree(CORPUS, dest)
    age(dest)
    return dest


def age(root: Path, when: float = HOUR_AGO) -> None:
    for p in root.rglob("*"):
        os.utime(p, (when, when))


def list_json(projects: Path) -> dict[str, dict]:
    out = subprocess.run(
        [sys.executable, "-m", "server.cli", "list", "--json", "--projects-dir", str(projects)],
        capture_output=True,
        check=True,
    )
    return {s["sessionId"]: s["usage"] for s in orjson.loads(out.stdout)}


def fresh_usage(projects: Path) -> dict[str, dict]:
    """Summed from the files, no cache of any kind."""
    infos = list_sessions(projects, count=False)
    return {i.session_id: session_usage_json(i) for i in infos}


def usage_caches(cache: Path) -> list[Path]:
    return sorted(cache.glob("usage-*.json"))


def assistant_row(path: Path, message_id: str, output_tokens: int) -> bytes:
    row = next(orjson.loads(line) for line in path.read_bytes().splitlines() if b'"type":"assistant"' in line)
    row["message"]["id"] = message_id
    row["message"]["usage"]["output_tokens"] = output_tokens
    row["uuid"] = "0000000a-0000-4000-8000-000000000001"
    return orjson.dumps(row) + b"\n"


def test_an_unchanged_session_is_not_summed_again(projects: Path, cache: Path) -> None:
    """Proof that nothing is read: the responses cache of earlier runs is not even loaded (removed, it is not
    written again). A same-size edit of a subagent's tokens with its mtime put back is summed again (its change
    time moved)."""
    first = list_json(projects)
    assert first == fresh_usage(projects)
    assert first[PARENT]["outputTokens"] > 0 and len(usage_caches(cache)) == 1
    usage_caches(cache)[0].unlink()
    assert list_json(projects) == first
    assert usage_caches(cache) == []
    sub = projects / SUBAGENT
    data = sub.read_bytes()
    edited = data.replace(b'"output_tokens":', b'"output_tokens":9', 1)
    sub.write_bytes(edited[: len(data) - 1] + b"\n")  # same inode, same size
    os.utime(sub, (HOUR_AGO, HOUR_AGO))
    again = list_json(projects)
    assert again == fresh_usage(projects) and again != first


def test_a_changed_subagent_file_sums_its_session_again(projects: Path, cache: Path) -> None:
    first = list_json(projects)
    sub = projects / SUBAGENT
    with open(sub, "ab") as fh:  # a new response in the subagent: the session file itself is untouched
        fh.write(assistant_row(sub, "msg_totals_new", 77))
    os.utime(sub, (HOUR_AGO + 60, HOUR_AGO + 60))
    second = list_json(projects)
    assert second == fresh_usage(projects)
    assert second[PARENT]["outputTokens"] == first[PARENT]["outputTokens"] + 77
    assert {k: v for k, v in second.items() if k != PARENT} == {k: v for k, v in first.items() if k != PARENT}


def test_a_recently_modified_session_is_summed_but_not_stored(projects: Path, cache: Path) -> None:
    sub = projects / SUBAGENT
    with open(sub, "ab") as fh:  # modified just now: a same-size rewrite could follow within the mtime's tick
        fh.write(assistant_row(sub, "msg_totals_recent", 5))
    infos = list_sessions(projects, count=False)
    assert sessions_usage_indexed(infos) == sessions_usage_json(infos)
    with sqlite3.connect(cache / DB_NAME) as conn:
        stored = {p for (p,) in conn.execute("SELECT path FROM usages")}
    assert str(projects / SHOP / f"{PARENT}.jsonl") not in stored
    assert len(stored) == len(infos) - 1


def test_a_damaged_total_is_summed_again(projects: Path, cache: Path) -> None:
    expected = fresh_usage(projects)
    list_json(projects)
    with sqlite3.connect(cache / DB_NAME) as conn:
        conn.execute("UPDATE usages SET usage = x'5b5b'")
    assert list_json(projects) == expected
    with sqlite3.connect(cache / DB_NAME) as conn:
        conn.execute("UPDATE usages SET usage = x'5b5d'")  # valid JSON, not a total
    assert list_json(projects) == expected


def test_caching_off_sums_every_time(projects: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SESSION_LSP_NO_CACHE", "1")
    assert list_json(projects) == fresh_usage(projects)
    assert not cache.exists()
