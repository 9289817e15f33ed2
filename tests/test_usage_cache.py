"""The usage cache: later runs read only appended bytes, and every change of a file is still counted right."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest
from conftest import CORPUS

import storage.usagecache as usagecache
from storage.usage import file_responses, total
from storage.usagecache import UsageCache, usage_cache_file

PAR = CORPUS / "projects" / "-Users-me-shop" / "11111111-1111-4111-8111-111111111111.jsonl"


def _copy(tmp_path: Path) -> Path:
    dest = tmp_path / PAR.name
    shutil.copy(PAR, dest)
    return dest


def _assistant_row(path: Path, message_id: str, output: int) -> bytes:
    row = next(orjson.loads(line) for line in path.read_bytes().splitlines() if b'"type":"assistant"' in line)
    row["message"]["id"] = message_id
    row["message"]["usage"]["output_tokens"] = output
    row["uuid"] = f"00000000-0000-4000-8000-{abs(hash((message_id, output))) % 10**12:012d}"
    return orjson.dumps(row)


def _figures(path: Path) -> tuple[int, int, int]:
    cache = UsageCache()
    u = total(cache.file_responses(path))
    cache.save()
    return u.input_tokens, u.output_tokens, u.responses


def test_appends_are_read_from_where_the_last_run_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _copy(tmp_path)
    assert usage_cache_file() is not None and not usage_cache_file().exists()  # type: ignore[union-attr]
    assert _figures(path) == (600, 120, 6)
    entry = orjson.loads(usage_cache_file().read_bytes())[str(path)]  # type: ignore[union-attr]
    assert entry[0] == path.stat().st_ino and entry[1] == path.stat().st_size and len(entry[2]) == 6

    # An in-place edit of an old row at the same size is seen: the file's change time moved.
    data = path.read_bytes()
    path.write_bytes(data.replace(b'"output_tokens":20,', b'"output_tokens":21,', 1))
    assert _figures(path) == (600, 121, 6)

    starts: list[int] = []  # proof that old bytes are not read again: where each read starts
    real = usagecache.assistant_lines
    monkeypatch.setattr(usagecache, "assistant_lines", lambda p, start: starts.append(start) or real(p, start))
    size = path.stat().st_size
    with open(path, "ab") as fh:  # a new response, then a later row of it with more output tokens
        fh.write(_assistant_row(path, "msg_new1", 30) + b"\n" + _assistant_row(path, "msg_new1", 45) + b"\n")
    assert _figures(path) == (700, 166, 7)
    assert starts == [size]
    assert total(file_responses(path)).output_tokens == 166  # as a read without the cache gives it


def test_unfinished_last_line_is_counted_but_not_stored(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    size = path.stat().st_size
    with open(path, "ab") as fh:
        fh.write(_assistant_row(path, "msg_tail", 7))  # no newline: a write in progress
    assert _figures(path) == (700, 127, 7)
    entry = orjson.loads(usage_cache_file().read_bytes())[str(path)]  # type: ignore[union-attr]
    assert entry[1] == size
    with open(path, "ab") as fh:
        fh.write(b"\n")
    assert _figures(path) == (700, 127, 7)
    assert orjson.loads(usage_cache_file().read_bytes())[str(path)][1] == path.stat().st_size  # type: ignore[union-attr]


def test_replaced_or_shrunk_file_is_read_again(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    assert _figures(path) == (600, 120, 6)
    lines = path.read_bytes().split(b"\n")
    first = next(i for i, line in enumerate(lines) if b'"type":"assistant"' in line)
    shorter = b"\n".join(lines[: first + 1]) + b"\n"
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(shorter)
    os.replace(replacement, path)  # a new inode
    assert _figures(path) == (100, 20, 1)
    path.write_bytes(shorter[: shorter.index(b"\n") + 1])  # same inode, shrunk: before any response
    assert _figures(path) == (0, 0, 0)


def test_damaged_cache_is_rebuilt(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    where = usage_cache_file()
    assert where is not None
    where.parent.mkdir(parents=True, exist_ok=True)
    for junk in (b"{not json", b"[1, 2]", orjson.dumps({str(path): [path.stat().st_ino, "x", 0, []]})):
        where.write_bytes(junk)
        assert _figures(path) == (600, 120, 6)


def test_cache_off(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SESSION_LSP_NO_CACHE", "1")
    path = _copy(tmp_path)
    assert _figures(path) == (600, 120, 6) and usage_cache_file() is None
