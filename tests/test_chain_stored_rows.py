"""`chain` of one session through the index database (`server.index.onefile`): the link rows stored for an
unchanged or appended-to file are restored instead of parsing the file again, stored ones are never trusted for a
rewritten file, and the output is always what reading the file gives (`SESSION_LSP_NO_CACHE=1`). Real processes,
a copy of the real corpus. Restored rows are proved by altering them in the database: the output follows."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import AN_HOUR, age

from server.index.saved import _decode_rows, _encode

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("SESSION_LSP_NO_CACHE", raising=False)
    return tmp_path / "cache" / "session-lsp"


def chain(projects: Path, path: Path, *, no_cache: bool = False) -> dict[str, Any]:
    env = {**os.environ, **({"SESSION_LSP_NO_CACHE": "1"} if no_cache else {})}
    out = subprocess.run(
        [sys.executable, "-m", "server.cli", "chain", str(path), "--json", "--projects-dir", str(projects)],
        capture_output=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    value = json.loads(out.stdout)
    assert isinstance(value, dict)
    return value


def stored_paths(cache: Path) -> list[str]:
    with sqlite3.connect(next(cache.glob("index*.sqlite3"))) as db:
        return [p for (p,) in db.execute("SELECT path FROM rowsets")]


def cut_stored_chain(cache: Path, path: Path) -> None:
    """Make the stored rows of `path` a root at its last user prompt: a chain from them is shorter."""
    with sqlite3.connect(next(cache.glob("index*.sqlite3"))) as db:
        (blob,) = db.execute("SELECT rows FROM rowsets WHERE path = ?", (str(path),)).fetchone()
        saved = _decode_rows(blob)
        last_user = [r for r in saved.rows if r.type == "user" and r.parent is not None][-1]
        last_user.parent = None
        db.execute("UPDATE rowsets SET rows = ? WHERE path = ?", (_encode(saved), str(path)))


def biggest(projects: Path) -> Path:
    return max(projects.glob("*/*.jsonl"), key=lambda p: p.stat().st_size)


def test_a_settled_file_is_restored_from_its_stored_rows(corpus_projects: Path, cache: Path) -> None:
    path = biggest(corpus_projects)
    age(path)
    first = chain(corpus_projects, path)
    assert first == chain(corpus_projects, path, no_cache=True)
    assert stored_paths(cache) == [str(path)]
    cut_stored_chain(cache, path)
    restored = chain(corpus_projects, path)
    assert 0 < len(restored["messages"]) < len(first["messages"])  # the stored rows, not the file's


def test_an_append_is_read_on_top_of_the_stored_rows(corpus_projects: Path, cache: Path) -> None:
    path = biggest(corpus_projects)
    age(path)
    first = chain(corpus_projects, path)
    leaf = first["leafUuid"]
    row = {
        "type": "user",
        "uuid": "0e0e0e0e-0000-4000-8000-000000000001",
        "parentUuid": leaf,
        "sessionId": path.stem,
        "timestamp": "2030-01-01T00:00:00.000Z",
        "isSidechain": False,
        "message": {"role": "user", "content": "appended after the rows were stored"},
    }
    with path.open("ab") as fh:
        fh.write(json.dumps(row).encode() + b"\n")
    age(path)
    appended = chain(corpus_projects, path)
    assert appended == chain(corpus_projects, path, no_cache=True)
    assert appended["leafUuid"] == row["uuid"] and appended["uuids"][:-1] == first["uuids"]


def test_a_rewritten_file_is_read_again(corpus_projects: Path, cache: Path) -> None:
    path = biggest(corpus_projects)
    age(path)
    first = chain(corpus_projects, path)
    cut_stored_chain(cache, path)  # what the database holds no longer matches what reading gives
    data = path.read_bytes()
    path.write_bytes(data.replace(b'"isSidechain":false', b'"isSidechain":false', 1))  # same bytes, new mtime
    age(path, AN_HOUR // 2)
    assert chain(corpus_projects, path) == first


def test_a_rewrite_with_its_mtime_put_back_is_read_again(corpus_projects: Path, cache: Path) -> None:
    """Same size, same mtime (put back as `touch -r` or `cp -p` leave it), another link: the leaf's parent becomes
    its grandparent. Only the change time shows it."""
    path = biggest(corpus_projects)
    age(path)
    first = chain(corpus_projects, path)
    before = os.stat(path)
    lines = path.read_bytes().split(b"\n")
    rows = {json.loads(line)["uuid"]: (n, json.loads(line)) for n, line in enumerate(lines) if b'"uuid"' in line}
    n, leaf = rows[first["leafUuid"]]
    parent = rows[leaf["parentUuid"]][1]
    assert len(parent["uuid"]) == len(parent["parentUuid"])
    lines[n] = lines[n].replace(parent["uuid"].encode(), parent["parentUuid"].encode())
    path.write_bytes(b"\n".join(lines))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (os.stat(path).st_size, os.stat(path).st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    again = chain(corpus_projects, path)
    assert again == chain(corpus_projects, path, no_cache=True)
    assert again != first


def test_a_file_written_just_now_is_not_stored(corpus_projects: Path, cache: Path) -> None:
    path = biggest(corpus_projects)
    os.utime(path)
    assert chain(corpus_projects, path) == chain(corpus_projects, path, no_cache=True)
    assert stored_paths(cache) == []


@pytest.mark.parametrize("index", range(4))
def test_every_corpus_session_chains_the_same_through_the_database(
    corpus_projects: Path, cache: Path, index: int
) -> None:
    path = sorted(corpus_projects.glob("*/*.jsonl"))[index]
    age(path)
    plain = chain(corpus_projects, path, no_cache=True)
    assert chain(corpus_projects, path) == plain  # read and stored
    assert chain(corpus_projects, path) == plain  # restored


@pytest.mark.parametrize("damage", [b"\xc1\xc1\xc1", b"\x93\xc2\x90", b""])
def test_damaged_stored_rows_are_read_from_the_file(damage: bytes, corpus_projects: Path, cache: Path) -> None:
    """Stored rows that do not decode (a malformed blob, a cut one, an empty one) are read from the file instead."""
    path = biggest(corpus_projects)
    age(path)
    first = chain(corpus_projects, path)
    with sqlite3.connect(next(cache.glob("index*.sqlite3"))) as db:
        assert db.execute("UPDATE rowsets SET rows = ? WHERE path = ?", (damage, str(path))).rowcount == 1
    assert chain(corpus_projects, path) == first


def test_the_answer_is_whole_before_the_rows_are_stored(corpus_projects: Path, cache: Path) -> None:
    """`chain` lets its output pipe go once the answer is printed and stores what it read after that: with the
    database held by another writer (its store waits for it), the reader has the whole answer while `chain` still
    waits to store. Before, the answer came only once the store had waited and given up (5 s)."""
    files = sorted(corpus_projects.glob("*/*.jsonl"), key=lambda p: p.stat().st_size)
    path = files[-1]
    age(path)
    chain(corpus_projects, files[0])  # the database exists
    holder = sqlite3.connect(next(cache.glob("index*.sqlite3")), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process's write under way
    command = [sys.executable, "-m", "server.cli", "chain", str(path), "--json", "--projects-dir", str(corpus_projects)]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert proc.stdout is not None
        answer = proc.stdout.read()  # to the end of the output
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=1)  # still waiting to store (up to 5 s)
        assert json.loads(answer) == chain(corpus_projects, path, no_cache=True)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        proc.wait(timeout=60)
    assert proc.returncode == 0
    assert str(path) in stored_paths(cache)  # stored once the database was free
