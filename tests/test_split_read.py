"""A big transcript's first read on two processes (`server.index.splitread`) gives exactly what one read gives: rows,
problems, lenient-reading notes, line offsets, the unfinished tail, at random split points and chunk sizes; a child
that dies is read around; `chain --json` of a file past the split size prints what an uncached read prints."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import age, line_starts, starts_in
from rawlsp import LIVENESS
from turnproc import ROOT, alive, children, has_read

import server.index.splitread as splitread
import storage.reader as reader
from server.index.forked import Child, ChildFailed
from storage.linemarks import LineMarks
from storage.reader import ReadResult, read_transcript


def _line(rng: random.Random, i: int) -> bytes:
    k = rng.random()
    text = rng.choice([b"x" * rng.randint(0, 300), "\u00e9t\u00e9 \u4e2d\u6587 \U0001f600".encode(), b"\\ud800 lone"])
    if k < 0.45:
        parent = b"null" if i == 0 else b'"u%d"' % rng.randrange(i)
        return b'{"type":"user","uuid":"u%d","parentUuid":%s,"message":{"content":"%s"}}' % (i, parent, text)
    if k < 0.55:
        return b'{"type":"assistant","uuid":"a%d","parentUuid":"u%d","message":{"id":"m","content":[]}}' % (i, i)
    if k < 0.65:
        return b""
    if k < 0.72:
        return b'{"type":"user","uuid":"b%d","message":{"content":"bad \xff\xfe utf-8"}}' % i
    if k < 0.8:
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 40))).replace(b"\n", b"")
    if k < 0.85:
        return b"[1, 2]"
    return b"{bad %d" % i


def _data(rng: random.Random) -> bytes:
    data = b"\n".join(_line(rng, i) for i in range(rng.randint(1, 80)))
    end = rng.random()
    if end < 0.5:
        data += b"\n" * rng.randint(1, 3)
    elif end < 0.7:
        data += b'\n{"type":"user","uuid":"torn","parentUuid":null'  # torn: does not parse
    # else: an unterminated last line that may parse (provisional)
    return b"\xef\xbb\xbf" + data if rng.random() < 0.2 else data


def _same(split: ReadResult, whole: ReadResult) -> None:
    assert split.rows == whole.rows
    assert [r.line for r in split.rows] == [r.line for r in whole.rows]
    assert split.problems == whole.problems
    assert split.notes == whole.notes
    assert split.state == whole.state
    assert split.unknown_tail == whole.unknown_tail
    assert split.provisional == whole.provisional
    if split.provisional is not None:
        assert split.provisional is split.rows[-1]


@pytest.fixture
def forks() -> list[int]:
    """How many times this process forks (a split read forks once)."""
    count = [0]
    os.register_at_fork(before=lambda: count.__setitem__(0, count[0] + 1))
    return count


@pytest.mark.parametrize("kept", [reader.KEPT_PROBLEMS, 2], ids=["bad-lines-kept", "bad-lines-folded"])
def test_two_halves_read_as_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forks: list[int], kept: int) -> None:
    """With few bad lines kept whole, both halves fold theirs: the folds join as one read's (their last lines too)."""
    monkeypatch.setattr(splitread, "SPLIT_BYTES", 1)
    monkeypatch.setattr(reader, "KEPT_PROBLEMS", kept)
    rng = random.Random(23)
    path = tmp_path / "t.jsonl"
    split_reads = 0
    for _ in range(150):
        data = _data(rng)
        path.write_bytes(data)
        monkeypatch.setattr(reader, "CHUNK", rng.choice([7, 64, 1 << 20]))
        before = forks[0]
        marks = LineMarks()
        got = splitread.read_from_start(path, marks)
        split_reads += forks[0] - before
        whole_marks = LineMarks()
        _same(got, read_transcript(path, None, whole_marks))
        assert line_starts(path, marks) == line_starts(path, whole_marks) == starts_in(data)
    assert split_reads > 100  # most files had a line starting past their middle: read on two processes


def test_a_small_file_is_read_here(tmp_path: Path, forks: list[int]) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"type":"user","uuid":"u","parentUuid":null,"message":{"content":"hi"}}\n' * 100)
    before = forks[0]
    _same(splitread.read_from_start(path), read_transcript(path))
    assert forks[0] == before


def _die(*args: object) -> bytes:
    os.kill(os.getpid(), signal.SIGKILL)
    return b""


def test_a_child_that_dies_is_read_around(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(splitread, "SPLIT_BYTES", 1)
    monkeypatch.setattr(splitread, "_read_half", _die)  # inherited by the child, which dies at once
    rng = random.Random(5)
    path = tmp_path / "d.jsonl"
    for _ in range(10):
        path.write_bytes(_data(rng))
        _same(splitread.read_from_start(path), read_transcript(path))


def test_a_child_gives_its_bytes_or_fails_and_is_reaped() -> None:
    with Child(lambda: b"x" * 3_000_000) as child:
        assert child.result() == b"x" * 3_000_000

    def raises() -> bytes:
        raise RuntimeError("no")

    with Child(raises) as child, pytest.raises(ChildFailed):
        child.result()
    with Child(lambda: _die()) as child, pytest.raises(ChildFailed):
        child.result()

    def sleeps() -> bytes:
        import time

        time.sleep(600)
        return b""

    with Child(sleeps) as child:
        pid = child.pid
        assert pid is not None
    with pytest.raises(ChildProcessError):  # killed and reaped when left unwaited
        os.waitpid(pid, os.WNOHANG)


@pytest.fixture(scope="module")
def past_split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from bench.make_projects import make_transcript

    big = make_transcript(tmp_path_factory.mktemp("split"), splitread.SPLIT_BYTES // 2**20 + 4, 3, compactions=True)
    age(big.parent.parent)
    return big


def test_chain_of_a_file_past_the_split_size_prints_what_an_uncached_read_prints(
    past_split: Path, tmp_path: Path
) -> None:
    big = past_split
    folder = ["--projects-dir", str(big.parent.parent)]
    command = [sys.executable, "-m", "server.cli", "chain", str(big), "--json", *folder]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    split = subprocess.run(command, capture_output=True, env=env, timeout=300, check=True)
    uncached = subprocess.run(
        command, capture_output=True, env={**env, "SESSION_LSP_NO_CACHE": "1"}, timeout=300, check=True
    )
    again = subprocess.run(command, capture_output=True, env=env, timeout=300, check=True)  # the stored rows
    assert split.stdout == uncached.stdout == again.stdout
    assert len(split.stdout) > 100_000


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_stopping_chain_ends_its_child_even_a_stuck_one(past_split: Path, tmp_path: Path, sig: signal.Signals) -> None:
    """`chain` waits for its child's half: stopped while the child is stuck for good, both end."""
    folder = ["--projects-dir", str(past_split.parent.parent)]
    for attempt in range(20):  # the child lives about 0.1 s: caught on most tries
        # an empty cache each time: a file whose rows are stored is not read again
        env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / f"cache{attempt}")}
        proc = subprocess.Popen(
            [sys.executable, "-m", "server.cli", "chain", str(past_split), "--json", *folder],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        child = None
        try:
            while proc.poll() is None and child is None:
                found = children(proc.pid)
                child = min(found) if found else None
            while child is not None and alive(child) and not has_read(child):  # past its start (ends with chain)
                pass
            if child is None or not alive(child):
                proc.communicate(timeout=LIVENESS)
                continue
            os.kill(child, signal.SIGSTOP)
            os.kill(proc.pid, sig)
            try:
                out, _ = proc.communicate(timeout=LIVENESS)
            except subprocess.TimeoutExpired:
                pytest.fail(f"chain still runs {LIVENESS} s after {sig.name} with its child stuck")
            deadline = time.monotonic() + LIVENESS
            while alive(child):
                assert time.monotonic() < deadline, f"the child {child} outlived chain ({sig.name})"
                time.sleep(0.05)
            assert proc.returncode in (130, -signal.SIGINT, -signal.SIGTERM), proc.returncode
            assert out == b""
            print(f"{sig.name} on try {attempt + 1}: chain ended with status {proc.returncode}, its child gone")
            return
        finally:
            if child is not None and alive(child):
                os.kill(child, signal.SIGKILL)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    pytest.fail("chain's child was never seen in 20 runs")


@pytest.mark.parametrize("finished", [True, False], ids=["finished", "unfinished"])
def test_a_line_too_long_in_the_second_half_is_named_by_its_place_in_the_file(tmp_path: Path, finished: bool) -> None:
    """The problem of a line over `MAX_LINE_BYTES` names its line in its message: the child numbers its lines from
    1, so the message it wrote named the wrong line (line 3 for the file's fourth) until renamed here. Sparse lines
    (holes read as NUL bytes) make lines of 130 MiB cost nothing on disk."""
    mib = 1 << 20
    row = b'{"type":"user","uuid":"u%d","parentUuid":null,"message":{"content":"hi"}}\n'
    path = tmp_path / "long.jsonl"
    with open(path, "wb") as fh:
        fh.write(row % 0)
        fh.seek(fh.tell() + 132 * mib)  # a line too long that ends just past the middle
        fh.write(b"\n" + row % 1)
        fh.seek(fh.tell() + 129 * mib)  # one in the second half
        fh.write(b"x\n" + row % 2 if finished else b"x")
    with open(path, "rb") as fh:
        assert splitread._middle(fh.fileno(), path.stat().st_size) is not None  # read on two processes
    marks = LineMarks()
    got = splitread.read_from_start(path, marks)
    whole_marks = LineMarks()
    whole = read_transcript(path, None, whole_marks)
    assert sum(p.too_long for p in whole.problems) == (2 if finished else 1)
    _same(got, whole)
    assert line_starts(path, marks) == line_starts(path, whole_marks)


@pytest.mark.parametrize("cut", [0, 5, 40], ids=["at-a-line", "torn", "provisional"])
def test_a_file_cut_short_of_its_middle_while_read_is_read_as_one_read_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cut: int
) -> None:
    """Truncated after its middle was found (as a rewrite does meanwhile): the first half stops short of the middle,
    on an unfinished line. Joined to the child's (empty) half, the result had the read state at the old middle, past
    the file's end, and lost the unfinished line (no unknown tail, the parsing one not provisional)."""
    monkeypatch.setattr(splitread, "SPLIT_BYTES", 1)
    path = tmp_path / "t.jsonl"
    lines = [b'{"type":"user","uuid":"u%d","parentUuid":null,"message":{"content":"hi"}}' % i for i in range(40)]
    data = b"\n".join(lines) + b"\n"
    at = (len(lines[0]) + 1) * 10  # the eleventh line's first byte, well before the middle
    middle = splitread._middle

    def cut_meanwhile(fd: int, size: int) -> int | None:
        found = middle(fd, size)
        os.truncate(path, at + (cut if cut < 40 else len(lines[10])))
        return found

    monkeypatch.setattr(splitread, "_middle", cut_meanwhile)
    path.write_bytes(data)
    marks = LineMarks()
    got = splitread.read_from_start(path, marks)
    whole_marks = LineMarks()
    whole = read_transcript(path, None, whole_marks)
    assert (whole.unknown_tail is not None, whole.provisional is not None) == (cut == 5, cut == 40)
    _same(got, whole)
    assert line_starts(path, marks) == line_starts(path, whole_marks) == starts_in(path.read_bytes())


def _bytes_read() -> int:
    """What this process has read so far (`rchar` of /proc/self/io: every read and pread, cached or not)."""
    with open("/proc/self/io") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("rchar:"))


@pytest.mark.parametrize("split", [False, True], ids=["whole", "halves"])
def test_the_holes_of_a_sparse_line_are_skipped_not_read(tmp_path: Path, split: bool) -> None:
    """A line too long to keep is only counted: its holes are skipped (`WholeLines._past_holes`), as a plain read
    skips them. The span a split read reads offered no descriptor to skip by, so `chain` of a sparse 1 GiB line (4 KB
    on disk) read all of it, and 9 s for one of 4 GiB where a plain read takes 0.3 s; read here, it is no more than
    the line's first `MAX_LINE_BYTES`."""
    gib = 1 << 30
    row = b'{"type":"user","uuid":"u%d","parentUuid":null,"message":{"content":"hi"}}\n'
    path = tmp_path / "sparse.jsonl"
    with open(path, "wb") as fh:
        fh.write(row % 0)
        fh.seek(fh.tell() + gib + (gib // 2 if split else 0))  # when split, it ends just past the middle
        fh.write(b"\n" + row % 1)
        if split:
            fh.seek(fh.tell() + gib + gib // 2 - (4 << 20))  # the child's
            fh.write(b"\n" + row % 2)
    with open(path, "rb") as fh:
        assert (splitread._middle(fh.fileno(), path.stat().st_size) is not None) == split
    before = _bytes_read()
    marks = LineMarks()
    got = splitread.read_from_start(path, marks)
    assert _bytes_read() - before < gib // 2  # the line's first 128 MiB, not its 1.5 GiB
    whole_marks = LineMarks()
    _same(got, read_transcript(path, None, whole_marks))
    assert line_starts(path, marks) == line_starts(path, whole_marks)
