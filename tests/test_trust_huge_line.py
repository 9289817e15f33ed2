"""A line of 2 GiB (NUL bytes after a row's head: a sparse file, no disk) in a session file, in the middle of it or
as its unfinished last line. No reader may hold it: each one runs in a process of its own, its address space capped
(so a reader that holds the line fails fast instead of taking the machine's memory), and its peak resident memory
must stay well under the line (before, read_transcript took 5.1 GB for a 1 GiB line, and every other reader 2 to 4
GB). The line is reported as too long, with its number and size, and every other line loads with its own number
and byte offset. The language server, given such a folder, reports it and keeps serving, within the same bound.
Nothing is timed: the timeouts are hang detectors."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from lspserver import open_session
from pytest_lsp import ClientServerConfig

from server.lsp.server import to_plain
from storage.linechunks import MAX_LINE_BYTES, LongLine, WholeLines

REPO = Path(__file__).resolve().parent.parent
SIZE = 2 << 30
"""The long line's bytes: past `MAX_LINE_BYTES` and past what the real CLI reads (2^31-1 UTF-16 units)."""
PEAK_MB = 300
"""The most resident memory a reader (or the server) may reach, in MB: well under the line, above the bound."""
ADDRESS_SPACE = 4 << 30
"""The address space each process is capped at, so that one holding the line fails before it takes the machine."""
HANG = 300.0
SID = "aaaaaaaa-0000-4000-8000-00000000000a"
U1, A1, LONG_UUID, BOUNDARY, U2, A2 = (f"00000000-0000-4000-8000-00000000000{i}" for i in range(1, 7))
LONG_HEAD = b'{"type":"assistant","uuid":"%s","subtype":"compact_boundary","message":{"id":"msg_long","content":"'
"""The long line's first bytes: the markers every reader looks for (a row, an assistant reply, a boundary, a uuid)."""


def _row(uuid: str, parent: str | None, kind: str, text: str, **extra: Any) -> bytes:
    row: dict[str, Any] = {"parentUuid": parent, "type": kind, "uuid": uuid, "sessionId": SID, **extra}
    if kind == "assistant":
        row["message"] = {
            "id": f"msg_{uuid[-1]}",
            "role": "assistant",
            "model": "claude-opus-5-5",
            "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    elif kind == "user":
        row["message"] = {"role": "user", "content": text}
    return json.dumps(row, separators=(",", ":")).encode() + b"\n"


HEAD = [
    _row(U1, None, "user", "first question", timestamp="2026-01-01T00:00:00.000Z"),
    _row(A1, U1, "assistant", "first answer", timestamp="2026-01-01T00:00:01.000Z"),
]
AFTER = [
    _row(
        BOUNDARY,
        None,
        "system",
        "",
        subtype="compact_boundary",
        content="Conversation compacted",
        logicalParentUuid=A1,
        timestamp="2026-01-01T01:00:00.000Z",
    ),
    _row(U2, BOUNDARY, "user", "AFTERWORD question", cwd="/Users/me/after", timestamp="2026-01-01T01:00:01.000Z"),
    _row(A2, U2, "assistant", "AFTERWORD answer", cwd="/Users/me/after", timestamp="2026-01-01T01:00:02.000Z"),
]


def _plant(path: Path, *, ended: bool) -> list[int]:
    """Write HEAD, a line of SIZE bytes (ended by a newline and AFTER, or unfinished); the offset of each line."""
    offsets, at = [], 0
    with open(path, "wb") as fh:
        for line in HEAD:
            offsets.append(at)
            at += fh.write(line)
        offsets.append(at)
        fh.write(LONG_HEAD % LONG_UUID.encode())
        fh.truncate(at + SIZE)  # NUL bytes to SIZE: a hole, no disk
        if ended:
            fh.seek(at + SIZE)
            at += SIZE + fh.write(b"\n")
            for line in AFTER:
                offsets.append(at)
                at += fh.write(line)
    return offsets


def _planted(projects: Path, *, ended: bool) -> tuple[Path, list[int]]:
    """The planted session file in its own project folder of `projects`, and the offset of each of its lines."""
    folder = projects / "-Users-me-planted"
    folder.mkdir(parents=True, mode=0o700)
    path = folder / f"{SID}.jsonl"
    return path, _plant(path, ended=ended)


@pytest.fixture
def middle(tmp_path: Path) -> tuple[Path, list[int]]:
    """A session file whose third line (line 3, 0-based 2) is SIZE bytes, followed by three rows."""
    return _planted(tmp_path / "middle" / "projects", ended=True)


@pytest.fixture
def unfinished(tmp_path: Path) -> tuple[Path, list[int]]:
    """A session file whose last line is SIZE bytes without a newline (yet)."""
    return _planted(tmp_path / "unfinished" / "projects", ended=False)


def _expected(data: bytes, start: int, limit: int) -> tuple[list[bytes | LongLine], bytes | LongLine]:
    """Each line of `data` from `start` with its newline, or its `LongLine` when over `limit`; then the rest."""
    lines: list[bytes | LongLine] = []
    while (nl := data.find(b"\n", start)) >= 0:
        lines.append(LongLine(start, nl - start) if nl - start > limit else data[start : nl + 1])
        start = nl + 1
    rest = data[start:]
    return lines, LongLine(start, len(rest)) if len(rest) > limit else rest


@pytest.mark.parametrize("arrays", [False, True], ids=["bytes", "arrays"])
def test_whole_lines_give_every_line_or_its_place_at_any_chunk_and_limit(tmp_path: Path, arrays: bool) -> None:
    """Small bounds on a real file, read from any offset with the unfinished line a previous read carried: every
    line comes once, whole, or as a `LongLine` with its exact offset and length, and so does the rest. Read as
    `arrays()` too, whose arrays stay as they were given."""
    rng = random.Random(20261202)
    path = tmp_path / "lines"
    for _ in range(3000):
        data = bytes(rng.choice(b"ab\n" if rng.random() < 0.5 else b"abcdefgh\n") for _ in range(rng.randrange(60)))
        path.write_bytes(data)
        limit = rng.randrange(1, 16)
        chunk, start = rng.randrange(1, limit + 1), rng.randrange(len(data) + 1)
        line_start = data.rfind(b"\n", 0, start) + 1
        carried = rng.randrange(line_start, start + 1)  # where the carried part of the line starts
        with open(path, "rb") as fh:
            fh.seek(start)
            pieces = WholeLines(fh, chunk, data[carried:start], limit=limit)
            got: list[bytes | LongLine] = []
            given: list[tuple[bytearray, bytes]] = []
            for piece in pieces.arrays() if arrays else pieces:
                assert isinstance(piece, LongLine) or piece.endswith(b"\n")
                if isinstance(piece, bytearray):
                    given.append((piece, bytes(piece)))
                got += [piece] if isinstance(piece, LongLine) else [ln + b"\n" for ln in piece.split(b"\n")[:-1]]
        lines, rest = _expected(data, carried, limit)
        assert got == lines, (data, start, carried, chunk, limit)
        assert all(array == copy for array, copy in given), (data, start, carried, chunk, limit)
        assert (pieces.long_rest or pieces.rest) == rest, (data, start, carried, chunk, limit)


def _bound_row(path: Path, extra: int) -> int:
    """HEAD, a progress row of `MAX_LINE_BYTES + extra` bytes written out in full, a row after it; that row's offset."""
    head = b'{"type":"progress","uuid":"%s","parentUuid":"%s","data":"' % (LONG_UUID.encode(), A1.encode())
    with open(path, "wb") as fh:
        fh.write(HEAD[0] + HEAD[1] + head)
        fh.write(b"x" * (MAX_LINE_BYTES + extra - len(head) - 2) + b'"}\n')
        fh.write(_row(U2, LONG_UUID, "user", "after"))
    return len(HEAD[0] + HEAD[1]) + MAX_LINE_BYTES + extra + 1


@pytest.mark.slow
def test_a_row_of_exactly_the_bound_loads_and_one_byte_more_is_reported(tmp_path: Path) -> None:
    """Real rows (tens of MB occur: cumulative progress rows) load up to the bound itself; one byte more does not."""
    from storage.reader import read_transcript

    path = tmp_path / f"{SID}.jsonl"
    after = _bound_row(path, 0)
    read = read_transcript(path)
    assert [(r.uuid, r.line) for r in read.rows] == [(U1, 0), (A1, 1), (LONG_UUID, 2), (U2, 3)]
    assert read.rows[2].length == MAX_LINE_BYTES and read.rows[3].offset == after and read.problems == []
    after = _bound_row(path, 1)
    read = read_transcript(path)
    assert [(r.uuid, r.line, r.offset) for r in read.rows] == [(U1, 0, 0), (A1, 1, len(HEAD[0])), (U2, 3, after)]
    assert [(p.line, p.length, p.too_long) for p in read.problems] == [(2, MAX_LINE_BYTES + 1, True)]


RUNNER = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({cap}, {cap}))
from pathlib import Path
path = Path(sys.argv[1])
{body}
own = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
peak = max(own, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(json.dumps({{"out": out, "peak_mb": peak // 1024}}))
"""


def run_reader(body: str, path: Path) -> Any:
    """Run `body` (which sets `out` from `path`) in a process of its own; `out`, once the peak memory is checked (its
    own, or that of a process it ran and waited for). Its own is VmHWM, not ru_maxrss, which counts the memory of
    the process it was started from (the exec of a vfork keeps the parent's high-water mark)."""
    code = RUNNER.format(cap=ADDRESS_SPACE, body=body)
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=HANG, cwd=REPO
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the reader hung on a {SIZE} byte line (no answer within {HANG:g} s)")
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout.splitlines()[-1])
    assert answer["peak_mb"] < PEAK_MB, f"peak {answer['peak_mb']} MB reading a line of {SIZE >> 20} MiB"
    return answer["out"]


READ = """
from storage.linemarks import LineMarks
from storage.reader import read_transcript
marks, first = LineMarks(), 0
r = read_transcript(path, marks=marks)
with open(path, "rb") as fh:  # every line's start, each looked up from the marks
    offsets = [marks.start(fh, n) for n in range(first, marks.count)]
problem = lambda p: None if p is None else [p.line, p.offset, p.length, p.message, p.torn, p.too_long]
out = {
    "rows": [[row.uuid, row.line, row.offset, row.length] for row in r.rows],
    "problems": [problem(p) for p in r.problems],
    "tail": problem(r.unknown_tail),
    "state": [r.state.offset, r.state.line, len(r.state.tail)],
    "offsets": offsets,
}
"""


def _spans(offsets: list[int], lines: list[int], uuids: list[str]) -> list[list[Any]]:
    rows = [*HEAD, b"", *AFTER]
    return [[u, n, offsets[n], len(rows[n]) - 1] for u, n in zip(uuids, lines)]


@pytest.mark.slow
def test_read_transcript_reports_the_line_and_reads_every_other(middle: tuple[Path, list[int]]) -> None:
    path, offsets = middle
    out = run_reader(READ, path)
    assert out["rows"] == _spans(offsets, [0, 1, 3, 4, 5], [U1, A1, BOUNDARY, U2, A2])
    [problem] = out["problems"]
    assert problem[:3] == [2, offsets[2], SIZE] and problem[4:] == [False, True]
    assert f"line 3 is too long to read: {SIZE:,} bytes" in problem[3]
    assert out["tail"] is None and out["offsets"] == offsets
    assert out["state"] == [path.stat().st_size, 6, 0]


@pytest.mark.slow
def test_read_transcript_keeps_no_unfinished_line_over_the_bound(unfinished: tuple[Path, list[int]]) -> None:
    """The next read starts at the line's first byte (as over `MAX_TAIL`): none of it is kept."""
    path, offsets = unfinished
    out = run_reader(READ, path)
    assert out["rows"] == _spans(offsets, [0, 1], [U1, A1]) and out["problems"] == []
    assert out["tail"][:3] == [2, offsets[2], SIZE] and out["tail"][4:] == [True, True]
    assert f"line 3 is too long to read: {SIZE:,} bytes so far, unfinished" in out["tail"][3]
    assert out["state"] == [offsets[2], 2, 0] and out["offsets"] == offsets


@pytest.mark.slow
def test_an_incremental_read_after_the_line_goes_on_from_it(middle: tuple[Path, list[int]]) -> None:
    """The index reads on from where it stopped: a read from the long line's start gives the same rows after it."""
    path, offsets = middle
    body = READ.replace(
        "r = read_transcript(path, marks=marks)",
        f"from storage.reader import ReadState\nfirst = 2\nr = read_transcript(path, ReadState({offsets[2]}, 2), marks)",
    )
    out = run_reader(body, path)
    assert out["rows"] == _spans(offsets, [3, 4, 5], [BOUNDARY, U2, A2])
    assert [p[:3] for p in out["problems"]] == [[2, offsets[2], SIZE]] and out["offsets"] == offsets[2:]


@pytest.mark.slow
def test_message_counts_pass_over_the_line(middle: tuple[Path, list[int]], unfinished: tuple[Path, list[int]]) -> None:
    body = """
from storage.countcache import CountCache, count_range
out = [count_range(path, 0), CountCache(where=None).count(path, path.stat())]
"""
    path, _ = middle
    assert run_reader(body, path) == [[4, path.stat().st_size], 4]  # two user rows, two replies; not the long line
    path, offsets = unfinished
    assert run_reader(body, path) == [[2, offsets[2]], 2]


@pytest.mark.slow
def test_compact_boundaries_after_the_line_are_found(middle: tuple[Path, list[int]]) -> None:
    body = """
from storage.boundaries import scan_boundaries
out = scan_boundaries(path)
"""
    path, _ = middle
    assert run_reader(body, path) == [[BOUNDARY], path.stat().st_size]


@pytest.mark.slow
def test_usage_counts_the_replies_around_the_line(
    middle: tuple[Path, list[int]], unfinished: tuple[Path, list[int]]
) -> None:
    body = """
from storage.usage import assistant_lines, file_responses
lines, end, tail = assistant_lines(path)
out = [[offset for offset, _ in lines], end, len(tail), [[r.offset, r.output_tokens] for r in file_responses(path)]]
"""
    path, offsets = middle
    assert run_reader(body, path) == [
        [offsets[1], offsets[5]],
        path.stat().st_size,
        0,
        [[offsets[1], 5], [offsets[5], 5]],
    ]
    path, offsets = unfinished
    assert run_reader(body, path) == [[offsets[1]], offsets[2], 0, [[offsets[1], 5]]]


@pytest.mark.slow
def test_search_finds_the_messages_after_the_line_at_their_line(middle: tuple[Path, list[int]]) -> None:
    body = """
from storage.search import SearchIndex
index = SearchIndex.open(path.parent.parent.parent / "search")
index.update(path.parent.parent)
out = sorted([hit.line, hit.uuid] for hit in index.search("AFTERWORD"))
"""
    path, _ = middle
    (path.parent.parent.parent / "search").mkdir(mode=0o700)
    assert run_reader(body, path) == [[4, U2], [5, A2]]


@pytest.mark.slow
def test_a_uuid_after_the_line_is_found_at_its_line(middle: tuple[Path, list[int]]) -> None:
    """`check`'s lookup of a uuid in files the index does not hold (server.index.rawsearch)."""
    body = f"""
from server.index.rawsearch import find_row
out = [[[str(p), line] for p, line in find_row([path], uuid)] for uuid in ({U2!r}, {LONG_UUID!r})]
"""
    path, _ = middle
    assert run_reader(body, path) == [[[str(path), 4]], []]


@pytest.mark.slow
def test_a_turn_finds_the_recorded_cwd_after_the_line(middle: tuple[Path, list[int]]) -> None:
    """The claude-cli provider reads the session's `cwd` from its rows: the first one carrying it is after the line."""
    body = """
from server.agent.providers.claude_cli import _recorded_cwd
out = _recorded_cwd(path)
"""
    path, _ = middle
    assert run_reader(body, path) == "/Users/me/after"


@pytest.mark.slow
def test_a_push_refuses_the_file_naming_the_line(middle: tuple[Path, list[int]]) -> None:
    """A push to a session store sends every row of the local copy, or none: such a line is an error, not read."""
    body = """
from storage.errors import NotATranscript
from storage.store_sync import file_rows
try:
    file_rows(path)
    out = None
except NotATranscript as exc:
    out = str(exc)
"""
    path, _ = middle
    assert run_reader(body, path) == (
        f"{path}:3: a line of {SIZE:,} bytes, over the {MAX_LINE_BYTES >> 20} MiB a line may have; nothing was sent"
    )


@pytest.mark.slow
def test_check_reports_the_line_and_checks_the_rest(middle: tuple[Path, list[int]]) -> None:
    path, _ = middle
    body = """
import subprocess
command = [sys.executable, "-m", "server.cli", "check", "--json", "--projects-dir", str(path.parent.parent)]
done = subprocess.run(command, capture_output=True, text=True)
out = [done.returncode, [[d["line"], d["code"], d["message"]] for d in json.loads(done.stdout)]]
"""
    code, diagnostics = run_reader(body, path)
    too_long = [d for d in diagnostics if d[1] == "line-too-long"]
    assert code == 1 and len(too_long) == 1 and too_long[0][0] == 3 and f"{SIZE:,} bytes" in too_long[0][2]
    assert not [d for d in diagnostics if d[1] in ("invalid-json", "torn-tail")]


WRAPPER = """
import resource, subprocess, sys
resource.setrlimit(resource.RLIMIT_AS, ({cap}, {cap}))
done = subprocess.run(sys.argv[2:])
with open(sys.argv[1], "w") as fh:
    fh.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024))
sys.exit(done.returncode)
"""
"""Runs the server as its child and, when it has ended, writes the peak memory of the server and of the workers it
forked (each waited for) to a file."""


@pytest.mark.slow
async def test_the_server_reports_the_line_and_keeps_serving(corpus_projects: Path, tmp_path: Path) -> None:
    """Beside the real CLI's corpus: the first index (on forked workers) reads the planted file, the line is a
    diagnostic on its line, and the server answers for that session and the others."""
    planted, _ = _planted(corpus_projects, ended=True)
    peak = tmp_path / "peak"
    server = [sys.executable, "-m", "server.cli", "serve", "--stdio"]
    wrapper = [sys.executable, "-c", WRAPPER.format(cap=ADDRESS_SPACE), str(peak)]
    client = await ClientServerConfig(server_command=[*wrapper, *server]).start()
    try:
        await open_session(client, corpus_projects)
        report = await client.text_document_diagnostic_async(
            lsp.DocumentDiagnosticParams(text_document=lsp.TextDocumentIdentifier(uri=planted.as_uri()))
        )
        too_long = [d for d in report.items if d.code == "line-too-long"]
        assert len(too_long) == 1 and too_long[0].range.start.line == 2, report.items
        assert too_long[0].severity == lsp.DiagnosticSeverity.Error and f"{SIZE:,} bytes" in too_long[0].message
        listed = to_plain(await client.protocol.send_request_async("sessions/list", {}))
        assert {SID, "11111111-1111-4111-8111-111111111111"} <= {s["sessionId"] for s in listed["sessions"]}
        chain = to_plain(await client.protocol.send_request_async("sessions/chain", {"sessionId": SID}))
        assert chain["uuids"][-2:] == [U2, A2]
    finally:
        await client.shutdown_session()
        await client.stop()
    assert int(peak.read_text()) < PEAK_MB
