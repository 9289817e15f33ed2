"""Line marks looked up after the file changed under them (`storage.linemarks`): a diagnostic's range computed once
the file was rewritten in place reads no further than the marks say the line can be, as every line's own offset
read at most the line (`ranges.MAX_LINE`); and a look-up racing the index's read of an append does not fail."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import BinaryIO

import pytest
from conftest import CountedReads

import server.index.ranges as ranges
import storage.reader as reader
from server.index import ProjectIndex
from server.index.filestate import FileState
from server.index.ranges import MAX_LINE

ROW = b'{"type":"user","uuid":"u%d","parentUuid":null,"message":{"content":"%s"}}\n'


def test_a_line_looked_up_in_a_file_rewritten_in_place_reads_a_bounded_span(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(ROW % (i, b"x" * 40) for i in range(100)))
    state = FileState(path)
    state.refresh()
    marks = state.line_marks
    assert marks.marks == 1  # 100 short lines: line 0 marked, the others found reading on from it
    with open(path, "r+b") as fh:  # rewritten in place (same inode), no newline in 64 MiB
        fh.truncate(0)
        fh.write(b"y" * (64 << 20))
    with open(path, "rb") as raw:
        counted = CountedReads(raw)
        found = marks.line_bytes(counted, 50, MAX_LINE)  # type: ignore[arg-type]
    assert found is None
    assert counted.bytes <= 2 * MAX_LINE, f"read {counted.bytes:,} bytes to find one line"


def test_diagnostics_while_the_index_reads_an_append_do_not_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ProjectIndex.diagnostics` gives the ranges (`locate`) outside the index's lock, with the file state's marks,
    which the index's thread updates in place while it reads what was appended (`LineMarks.resume`): once that read
    began, the torn last line no longer counted and its diagnostic's look-up raised IndexError (the request failed).
    Here the index's read of the append is held right after it began, while `locate` opens the file."""
    session = "11111111-1111-1111-1111-111111111111"
    path = tmp_path / "projects" / "-tmp-x" / f"{session}.jsonl"
    path.parent.mkdir(parents=True)
    row = b'{"type":"user","uuid":"u%d","parentUuid":%s,"sessionId":"%s","message":{"role":"user","content":"x"}}\n'
    rows = [row % (i, b"null" if i == 0 else b'"u%d"' % (i - 1), session.encode()) for i in range(10)]
    path.write_bytes(b"".join(rows) + b'{"type":"user","uuid":"torn"')
    idx = ProjectIndex(tmp_path / "projects", persist=False)
    idx.scan()
    assert [(d.line, d.code) for d in idx.diagnostics(path, ranges=False)] == [(10, "torn-tail")]  # not ranged yet
    with open(path, "ab") as fh:
        fh.write(b',"parentUuid":"u9"}\n{"type":"user","uuid":"torn2"')
    reading, go_on = threading.Event(), threading.Event()
    real_lines, real_open = reader.WholeLines, ranges.open_regular

    class Held(real_lines):  # type: ignore[misc,valid-type]
        def arrays(self):  # type: ignore[no-untyped-def]
            reading.set()
            go_on.wait(10)
            yield from super().arrays()

    def opened(p: Path) -> BinaryIO:  # locate has its diagnostics to range: the index reads the append meanwhile
        index.start()
        assert reading.wait(10)
        return real_open(p)

    index = threading.Thread(target=idx.update_file, args=(path,))
    monkeypatch.setattr(reader, "WholeLines", Held)
    monkeypatch.setattr(ranges, "open_regular", opened)
    try:
        diags = idx.diagnostics(path)
    finally:
        go_on.set()
        if index.is_alive() or index.ident is not None:
            index.join()
        idx.close()
    assert [(d.line, d.code, d.start_char) for d in diags] == [(10, "torn-tail", 0)]
