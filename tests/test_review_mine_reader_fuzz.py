"""Review of the array reading: read_transcript against a naive split, at random chunk sizes, read at once and in
appended steps; WholeLines.arrays() against plain iteration, with small limits (lines over the limit)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from conftest import line_starts

import storage.reader as reader
from storage.linechunks import LongLine, WholeLines
from storage.linemarks import LineMarks
from storage.reader import read_transcript


def _data(rng: random.Random) -> bytes:
    parts = []
    for i in range(rng.randint(0, 30)):
        k = rng.random()
        if k < 0.3:
            body = b"x" * rng.randint(0, 200)
            parts.append(b'{"type":"user","uuid":"u%d","parentUuid":null,"message":{"content":"%s"}}' % (i, body))
        elif k < 0.5:
            parts.append(b"")
        elif k < 0.6:
            parts.append(b"  \r")
        elif k < 0.8:
            parts.append(bytes(rng.randrange(256) for _ in range(rng.randint(1, 40))).replace(b"\n", b""))
        else:
            parts.append(b"{bad %d" % i)
    data = b"\n".join(parts) + b"\n" * rng.randint(0, 4)
    return b"\xef\xbb\xbf" + data if rng.random() < 0.2 else data


def test_lines_and_offsets_match_a_naive_split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(11)
    path = tmp_path / "t.jsonl"
    for _ in range(400):
        data = _data(rng)
        path.write_bytes(data)
        monkeypatch.setattr(reader, "CHUNK", rng.randint(1, 64))
        marks = LineMarks()
        got = read_transcript(path, None, marks)
        offsets = line_starts(path, marks)
        lines, naive, at = data.split(b"\n"), [], 0
        for line in lines:
            naive.append(at)
            at += len(line) + 1
        if data.endswith(b"\n") or not data:
            naive.pop()
        assert offsets == naive
        for row in got.rows:
            bom = 3 if row.line == 0 and data.startswith(b"\xef\xbb\xbf") else 0
            assert (row.offset, row.length) == (naive[row.line] + bom, len(lines[row.line]) - bom)
        assert isinstance(got.state.tail, bytes)
        state, lines_seen = None, []
        for cut in [*sorted(rng.sample(range(len(data) + 1), min(3, len(data) + 1))), len(data)]:
            path.write_bytes(data[:cut])
            step = read_transcript(path, state)
            lines_seen = [n for n in lines_seen if state is None or n < state.line] + [r.line for r in step.rows]
            state = step.state
            assert isinstance(state.tail, bytes)
        assert lines_seen == [r.line for r in got.rows]


def _pieces(lines: WholeLines, it: object) -> tuple[list[object], bytes, object]:
    out: list[object] = []
    for piece in it:  # type: ignore[attr-defined]
        if isinstance(piece, LongLine):
            out.append((piece.offset, piece.length))
        else:
            out.extend(bytes(piece).split(b"\n")[:-1])
    long = lines.long_rest
    return out, lines.rest, None if long is None else (long.offset, long.length)


def test_arrays_give_what_iteration_gives(tmp_path: Path) -> None:
    rng = random.Random(5)
    path = tmp_path / "g.bin"
    for _ in range(3000):
        data = bytes(rng.choice(b"ab\n\n\x00") for _ in range(rng.randint(0, 150)))
        path.write_bytes(data)
        limit = rng.randint(1, 40)
        chunk = rng.randint(1, limit)
        carry = bytes(rng.choice(b"ab") for _ in range(rng.randint(0, 3)))
        skip = rng.randint(0, min(3, len(data)))
        with path.open("rb") as a, path.open("rb") as b:
            a.seek(skip)
            b.seek(skip)
            plain = WholeLines(a, chunk, carry, limit=limit)
            arrays = WholeLines(b, chunk, carry, limit=limit)
            assert _pieces(plain, iter(plain)) == _pieces(arrays, arrays.arrays())
