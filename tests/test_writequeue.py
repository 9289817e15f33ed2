"""The write queue: order, one append per batch, timer and explicit flushes, torn tails, fsync."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from unittest import mock

import pytest

from storage.jsonline import dump_line
from storage.writequeue import WriteQueue, append_lines


def test_batches_are_single_appends_in_order(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "t.jsonl"
    q = WriteQueue(interval=None)
    for i in range(50):
        q.put(target, dump_line({"parentUuid": None, "i": i}), f"k{i}")
    writes = []
    real = os.write
    with mock.patch("storage.writequeue.os.write", side_effect=lambda fd, b: writes.append(len(b)) or real(fd, b)):
        assert q.flush().durable == [f"k{i}" for i in range(50)]
    assert len(writes) == 1
    assert [json.loads(x)["i"] for x in target.read_text().splitlines()] == list(range(50))
    assert q.flush().durable == []
    assert oct(target.stat().st_mode & 0o777) == "0o600"
    assert oct(target.parent.stat().st_mode & 0o777) == "0o700"


def test_timer_flush_is_reported_by_the_next_flush(tmp_path: Path) -> None:
    target = tmp_path / "t.jsonl"
    q = WriteQueue(interval=0.02)
    q.put(target, b'{"a":1}\n', "a")
    deadline = time.monotonic() + 5
    # the file may exist a moment before its bytes are in: wait for the bytes (5 s is a hang detector)
    while (not target.exists() or not target.read_bytes()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert target.read_bytes() == b'{"a":1}\n'
    assert q.flush().durable == ["a"]
    q.close()
    with pytest.raises(RuntimeError):
        q.put(target, b"{}\n")


def test_torn_tail_is_sealed_and_reported(tmp_path: Path) -> None:
    target = tmp_path / "t.jsonl"
    target.write_bytes(b'{"ok":1}\n{"torn":')
    seen = []
    q = WriteQueue(interval=None, on_torn=seen.append)
    q.put(target, b'{"next":2}\n', "n")
    result = q.flush()
    assert [t.offset for t in result.sealed] == [len(b'{"ok":1}\n{"torn":')] and seen == result.sealed
    assert target.read_bytes() == b'{"ok":1}\n{"torn":\n{"next":2}\n'


def test_fsync_mode_syncs_file_and_new_folder(tmp_path: Path) -> None:
    calls = []
    real = os.fsync
    with mock.patch("storage.writequeue.os.fsync", side_effect=lambda fd: calls.append(fd) or real(fd)):
        append_lines(tmp_path / "new" / "t.jsonl", b"{}\n", fsync=True)
    assert len(calls) >= 2  # the file, then its folder (it was created)


def test_lines_must_be_whole(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        WriteQueue(interval=None).put(tmp_path / "x", b"{}")


def test_dump_line_keeps_parent_first_and_raw_utf8() -> None:
    line = dump_line({"type": "user", "parentUuid": None, "t": "é\ud800"})
    assert line.startswith(b'{"parentUuid":null,') and line.endswith(b"\n")
    assert "é\ufffd".encode() in line


def test_the_timer_thread_ends_when_the_queue_is_closed(tmp_path: Path) -> None:
    """A close while the timer waits for a burst to gather (right after a put, as every recorder closes) ends the
    timer's thread: before, it cleared the close's wake-up and waited for ever (one thread more per agent turn)."""
    timers = []
    for i in range(5):
        q = WriteQueue(interval=0.05)
        q.put(tmp_path / f"{i}.jsonl", b'{"a":1}\n', "a")
        timer = q._timer
        assert timer is not None
        q.close()
        timers.append(timer)
    for timer in timers:
        timer.join(5)  # a hang detector: the thread ends within one interval
    assert [t.is_alive() for t in timers] == [False] * 5
    assert all((tmp_path / f"{i}.jsonl").read_bytes() == b'{"a":1}\n' for i in range(5))
