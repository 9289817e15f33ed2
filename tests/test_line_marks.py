"""Where lines start, kept as sparse marks (`storage.linemarks`): every line's start and the number of lines equal
what the file's bytes say, read whole, in appended steps (torn lines, blank runs cut anywhere), through a restart's
stored marks, a rewrite, and the split read; the marks of a file of millions of short lines stay few; diagnostics'
ranges are those every line's own offset gives."""

from __future__ import annotations

import os
import random
import re
import shutil
import sys
import tracemalloc
from pathlib import Path

import pytest
from conftest import CountedReads, starts_in

import server.index.splitread as splitread
import storage.linemarks as linemarks
import storage.reader as reader
from server.index import ProjectIndex
from server.index.filestate import FileState
from server.index.saved import dump_file
from storage.linemarks import LineMarks

TESTS = Path(__file__).resolve().parent
ROW = b'{"type":"user","uuid":"u%d","parentUuid":%s,"message":{"content":"%s"}}'


def _piece(rng: random.Random, i: int, long: int) -> bytes:
    """Some lines, each ended by a newline."""
    k = rng.random()
    if k < 0.3:
        parent = b"null" if rng.random() < 0.5 else b'"u%d"' % rng.randrange(i + 1)
        return ROW % (i, parent, b"x" * rng.randint(0, 300)) + b"\n"
    if k < 0.45:  # a run of blank lines: short, or past any mark due
        return b"\n" * rng.choice([1, 2, rng.randint(3, 40), rng.randint(200, 3000)])
    if k < 0.55:  # many short lines of garbage
        return b"x\n" * rng.randint(1, 700)
    if k < 0.65:
        return b"y" * rng.randint(long // 2, 2 * long) + b"\n"  # past the bytes between marks
    if k < 0.75:
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 60))).replace(b"\n", b"") + b"\n"
    if k < 0.85:
        return b'{"type":"user","uuid":"c%d","message":{"content":"crlf"}}\r\n' % i
    if k < 0.9:
        return b"  \r\n"
    return b"{bad %d\n" % i


def _data(rng: random.Random, long: int) -> bytes:
    data = b"".join(_piece(rng, i, long) for i in range(rng.randint(0, 40)))
    end = rng.random()
    if end < 0.3:
        data += b'{"type":"user","uuid":"torn","parentUuid":null'  # unfinished, does not parse
    elif end < 0.45:
        data += ROW % (999, b"null", b"provisional")  # unfinished, parses
    elif end < 0.55:
        data += b"z" * rng.randint(1, 3 * long)  # unfinished, maybe past the tail kept
    return b"\xef\xbb\xbf" + data if rng.random() < 0.2 else data


def _lines_to_check(rng: random.Random, data: bytes, marks: LineMarks, every: bool) -> list[int]:
    """Every line, or (with real mark spacing, where each look-up may read 64 KiB) the lines around every mark and
    every line break of the kind that changes, and some at random."""
    count = marks.count
    if every:
        return list(range(count))
    near: set[int] = set()
    for line in [*marks._lines, marks.lines, *rng.sample(range(count), min(count, 200))]:
        near.update(range(max(0, line - 2), min(count, line + 3)))
    starts = starts_in(data)
    for n in range(1, count):  # where a blank run, a run of short lines or a long line begins or ends
        if n + 1 < count:
            was, now = starts[n] - starts[n - 1], starts[n + 1] - starts[n]
            if (was == 1) != (now == 1) or (was == 2) != (now == 2) or (was > 1000) != (now > 1000):
                near.update(range(max(0, n - 2), min(count, n + 3)))
    return sorted(near)


def _check(path: Path, data: bytes, marks: LineMarks, rng: random.Random, *, every: bool) -> None:
    """Every line's start (or those `_lines_to_check` picks), found with a bounded read; its first bytes."""
    starts = starts_in(data)
    assert marks.count == len(starts)
    texts = data.split(b"\n")
    bound = linemarks.EVERY_BYTES + linemarks.EVERY_LINES + linemarks.PIECE
    with open(path, "rb") as fh:
        for n in _lines_to_check(rng, data, marks, every):
            counted = CountedReads(fh)
            assert marks.start(counted, n) == starts[n], n  # type: ignore[arg-type]
            assert counted.bytes <= bound, n
            limit = rng.choice([1, 5, 100, 1 << 20])
            assert marks.line_bytes(fh, n, limit) == (starts[n], texts[n][:limit]), n
        for n in (-1, marks.count):
            with pytest.raises(IndexError):
                marks.start(fh, n)
    assert LineMarks.from_bytes(marks.to_bytes()) == marks


SPACINGS = {
    "real": (linemarks.EVERY_LINES, linemarks.EVERY_BYTES, linemarks.FIRST_PIECE, linemarks.PIECE, reader.MAX_TAIL),
    "tight": (3, 64, 5, 16, 50),
}


@pytest.fixture(params=sorted(SPACINGS))
def spacing(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> tuple[bool, int]:
    """(every line checked, the length of a long line): "real" as shipped, "tight" with marks every 3 lines or 64
    bytes, read forward 5 then up to 16 bytes at a time, an unfinished line kept up to 50 bytes."""
    lines, nbytes, first, piece, tail = SPACINGS[request.param]
    monkeypatch.setattr(linemarks, "EVERY_LINES", lines)
    monkeypatch.setattr(linemarks, "EVERY_BYTES", nbytes)
    monkeypatch.setattr(linemarks, "FIRST_PIECE", first)
    monkeypatch.setattr(linemarks, "PIECE", piece)
    monkeypatch.setattr(reader, "MAX_TAIL", tail)
    return request.param == "tight", max(40, 6 * nbytes)


@pytest.mark.parametrize("split", [False, True], ids=["one-read", "split-read"])
def test_every_line_starts_where_the_bytes_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spacing: tuple[bool, int], split: bool
) -> None:
    """Files read whole (or in two halves), then appended to in random steps (cut inside lines and blank runs),
    restarted from their stored marks now and then, and rewritten: after each read, every line's start."""
    every, long = spacing
    monkeypatch.setattr(splitread, "SPLIT_BYTES", 1)
    rng = random.Random(7 + split + 2 * every)
    path = tmp_path / "t.jsonl"
    for _ in range(12 if every else 5):
        monkeypatch.setattr(reader, "CHUNK", rng.choice([7, 64, 4096, 1 << 20]))
        data = _data(rng, long)
        cut = rng.randint(0, len(data))
        path.write_bytes(data[:cut])
        state = FileState(path)
        state.refresh(split=split)
        _check(path, data[:cut], state.line_marks, rng, every=every)
        at = cut
        while at < len(data):
            step = rng.choice([1, 2, 17, rng.randint(1, len(data) - at)])
            with open(path, "ab") as fh:
                fh.write(data[at : at + step])
            at += step
            if rng.random() < 0.2:  # a restart: the marks as the index database gives them back
                state.line_marks = LineMarks.from_bytes(state.line_marks.to_bytes())
            state.refresh(split=split)
            _check(path, data[:at], state.line_marks, rng, every=every)
        new = _data(rng, long) + b"\n"  # rewritten, another inode: read again from the start
        path.with_suffix(".new").write_bytes(new)
        os.replace(path.with_suffix(".new"), path)
        state.refresh(split=split)
        _check(path, new, state.line_marks, rng, every=every)
        with open(path, "r+b") as fh:  # cut short: read again from the start
            fh.truncate(len(new) // 3)
        state.refresh(split=split)
        _check(path, new[: len(new) // 3], state.line_marks, rng, every=every)


@pytest.mark.parametrize("line", [b"\n", b"x\n", b"\n\n\n}\n\r\n"], ids=["newlines", "short-garbage", "mixed"])
def test_millions_of_short_lines_keep_few_marks(tmp_path: Path, line: bytes) -> None:
    """200 MiB of newlines kept 8 bytes a line in memory (a check peaked at 1.68 GB), and as many in the index
    database; a line's start now costs a mark every 256 lines at most, a blank run two."""
    n = 6_000_000 // len(line)
    per = line.count(b"\n")
    lines = n * per
    path = tmp_path / "g.jsonl"
    path.write_bytes(line * n)
    state = FileState(path)
    traced = line == b"\n"  # tracing slows every allocation: a read of lines of garbage is measured by its result
    if traced:
        tracemalloc.start()
    try:
        state.refresh()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert state.line_count == lines
    assert not traced or held < lines // 2  # what the state holds after its read: it was 8 bytes a line
    assert len(dump_file(state)[0]) < lines // 10  # what the index database stores of it
    assert state.line_marks.marks < lines // 100
    assert sys.getsizeof(state.line_marks) < lines // 10
    some = [0, 1, 2, lines // 2 + 1, lines - 2, lines - 1]
    with open(path, "rb") as fh:
        found = [state.line_marks.start(fh, k) for k in some]
    assert found == [k // per * len(line) + starts_in(line)[k % per] for k in some]


def _projects_folders() -> list[Path]:
    found = [TESTS.parent / "examples" / "projects"]
    for corpus in sorted((TESTS / "corpus").iterdir()):
        found += sorted(p for p in corpus.rglob("projects") if p.is_dir() and p.parent.name != "projects")
    return found


def _ranges(projects: Path) -> list[tuple[str, int, str, int | None, int | None]]:
    idx = ProjectIndex(projects, persist=False)
    idx.scan()
    out = []
    for path in sorted(idx.files):
        out += [(str(path), d.line, d.code, d.start_char, d.end_char) for d in idx.diagnostics(path)]
    idx.close()
    return out


def test_diagnostic_ranges_are_those_of_every_line_marked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundled example and every corpus, with lines joined by runs of blank lines and lines of garbage: the
    ranges of their diagnostics as with every line's start kept (a mark on every line), with marks every 256 lines
    or 16 KiB, and with marks every 3 lines or 64 bytes read forward 5 then up to 16 bytes at a time."""
    copies = []
    for i, folder in enumerate(_projects_folders()):
        copy = tmp_path / f"p{i}"
        shutil.copytree(folder, copy)
        copies.append(copy)
    for i, source in enumerate(["claude-code-1.0.0", "claude-code-2.0.0"]):  # keyed diagnostics: ranges in lines
        padded = tmp_path / f"padded{i}"
        shutil.copytree(TESTS / "corpus" / "versions" / source / "projects", padded)
        rng = random.Random(3 + i)
        for path in sorted(padded.rglob("*.jsonl")):
            lines = path.read_bytes().split(b"\n")
            lines = [  # some parents gone: dangling, a range on the value of parentUuid
                re.sub(b'"parentUuid":"', b'"parentUuid":"gone-', text, count=1) if rng.random() < 0.3 else text
                for text in lines
            ]
            pads = [rng.choice([b"", b"\n" * rng.randint(1, 900), b"x\n" * rng.randint(1, 300)]) for _ in lines]
            path.write_bytes(b"".join(pad + text + b"\n" for pad, text in zip(pads, lines[:-1])) + lines[-1])
        copies.append(padded)
    seen = {}
    for name, spacing in {
        "every": (1, 1, linemarks.FIRST_PIECE, linemarks.PIECE),
        "real": (linemarks.EVERY_LINES, linemarks.EVERY_BYTES, linemarks.FIRST_PIECE, linemarks.PIECE),
        "tight": (3, 64, 5, 16),
    }.items():
        for constant, value in zip(["EVERY_LINES", "EVERY_BYTES", "FIRST_PIECE", "PIECE"], spacing):
            monkeypatch.setattr(linemarks, constant, value)
        seen[name] = [_ranges(copy) for copy in copies]
    assert seen["real"] == seen["every"] and seen["tight"] == seen["every"]
    assert sum(len(r) for r in seen["every"]) > 50
    padded_ranges = [r for ranges in seen["every"][-2:] for r in ranges]
    assert sum(1 for r in padded_ranges if r[2] == "dangling-parent" and r[3] not in (None, 0)) > 20


def test_stored_marks_that_do_not_end_where_the_read_stopped_are_damage(tmp_path: Path) -> None:
    """A stored state whose marks disagree with its read state (a damaged value that still decodes) is not restored:
    its next append would be read at the wrong line. `load_file` raises what the index takes for damage (the
    database is rebuilt, the file read again)."""
    import msgspec

    from server.index.filestate import FileState
    from server.index.saved import SavedHead, dump_file, load_file
    from storage.indexdb import DAMAGE, Identity

    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"type":"user","uuid":"a","parentUuid":null,"message":{"content":"hi"}}\n' * 300)
    state = FileState(path)
    state.refresh()
    head, _ = dump_file(state)
    identity = Identity.of(path, os.stat(path))
    assert load_file(path, identity, head, lambda: None).line_count == 300  # as stored: restored
    saved = msgspec.msgpack.decode(head, type=SavedHead)
    other = FileState(path)
    path.write_bytes(path.read_bytes()[: 200 * 72])
    other.refresh()  # marks of 200 lines, under a read state of 300
    bad = msgspec.msgpack.encode(msgspec.structs.replace(saved, line_marks=other.line_marks.to_bytes()))
    with pytest.raises(DAMAGE):
        load_file(path, identity, bad, lambda: None)
