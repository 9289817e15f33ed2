"""A file's bad lines past the first `KEPT_PROBLEMS` of their kind are counted in one folded problem, not kept (and not
even parsed when no reader could make an object of them): what `check` reports is exactly what keeping every bad line
gave, for a file read at once, read in appended steps, and restored from the index database. (20 MB of `x` lines kept
10 M problems, 5.4 GB, and took 157 s to check; 108 MB and 5.1 s now: a bench figure, not a test.)"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import storage.reader as reader
from server.cli import main
from server.index.filestate import FileState
from storage.badlines import KEPT_PROBLEMS
from storage.reader import LineProblem, read_transcript

SID = "0b8f5f7e-5b7c-4d7e-9c1a-2f3e4d5c6b7a"


def _line(rng: random.Random, i: int) -> bytes:
    return rng.choice(
        [
            b"x",
            b"[1, 2]",
            b"1",
            b'"a string"',
            b"  {bad",
            b"\t[",
            b"",
            b"\x0b",
            b" \t\r",
            b"\xef\xbb\xbf{}",
            b'{"a": 1e400}',  # only the lenient reader takes it: a row
            b'{"type":"user","uuid":"s%d","parentUuid":null,"message":{"content":"\\ud800"}}' % i,  # lenient too
            b'{"type":"user","uuid":"u%d","parentUuid":null,"message":{"content":"hi \xff"}}' % i,
            b'{"type":"user","uuid":"v%d","parentUuid":null,"sessionId":"%s","message":{"content":"ok"}}'
            % (i, SID.encode()),
            rng.randbytes(rng.randint(1, 30)).replace(b"\n", b""),
        ]
    )


def _data(seed: int) -> bytes:
    rng = random.Random(seed)
    return b"\n".join(_line(rng, i) for i in range(rng.randint(3 * KEPT_PROBLEMS, 12 * KEPT_PROBLEMS))) + b"\n"


def _check(path: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    assert main(["check", str(path), "--json"]) in (0, 1)
    report = json.loads(capsys.readouterr().out)
    assert isinstance(report, list)
    return report


@pytest.mark.parametrize("seed", range(6))
def test_the_report_is_what_keeping_every_bad_line_gave(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "projects" / "-home-x" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(_data(seed))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    bounded = _check(path, capsys)
    again = _check(path, capsys)  # from the index database
    monkeypatch.setattr(reader, "KEPT_PROBLEMS", 10**9)  # every bad line kept, as before
    monkeypatch.setenv("SESSION_LSP_NO_CACHE", "1")
    whole = _check(path, capsys)
    assert bounded == whole == again
    folded = [d for d in whole if d.get("more")]
    assert any(d["code"] == "invalid-json" for d in folded)


def _expected(every: list[LineProblem]) -> list[tuple[int, bool, int, int]]:
    """(line, too long, more, last) of the problems a file keeps, from every one of them."""
    out: list[tuple[int, bool, int, int]] = []
    for kind in (False, True):
        mine = [p.line for p in every if p.too_long == kind]
        out += [(line, kind, 0, -1) for line in mine[:KEPT_PROBLEMS]]
        if len(mine) > KEPT_PROBLEMS:
            out.append((mine[KEPT_PROBLEMS], kind, len(mine) - KEPT_PROBLEMS, mine[-1]))
    return sorted(out)


def test_reads_in_steps_keep_and_count_as_one_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(3)
    path = tmp_path / f"{SID}.jsonl"
    for seed in range(8):
        data = _data(seed)
        with monkeypatch.context() as m:
            m.setattr(reader, "KEPT_PROBLEMS", 10**9)
            every = read_transcript(path if path.write_bytes(data) else path).problems
        assert len(every) > KEPT_PROBLEMS
        path.write_bytes(b"")
        state = FileState(path)
        state.refresh()
        cuts = sorted(rng.sample(range(len(data)), 6)) + [len(data)]
        at = 0
        for cut in cuts:
            with open(path, "ab") as fh:
                fh.write(data[at:cut])
            at = cut
            state.refresh()
        got = sorted((p.line, p.too_long, p.more, p.last) for p in state.problems)
        assert got == _expected(every)
        assert len(state.problems) <= 2 * (KEPT_PROBLEMS + 1)
