"""Lenient parsing: bad lines reported with their line number, the rest still loads."""

from __future__ import annotations

from pathlib import Path

from storage.reader import ReadState, read_transcript
from storage.resume import resume
from storage.transcript import Transcript

SESSION = "-Users-me-shop/11111111-1111-4111-8111-111111111111.jsonl"


def test_garbage_line_reported_rest_loads(corpus_projects: Path) -> None:
    path = corpus_projects / SESSION
    lines = path.read_bytes().split(b"\n")
    clean_rows = len(Transcript.load(path).rows)
    lines.insert(10, b"{this is not json")
    lines.insert(5, b"")
    path.write_bytes(b"\n".join(lines))
    t = Transcript.load(path)
    assert len(t.rows) == clean_rows
    assert [p.line for p in t.problems] == [11]  # 0-based: the 12th line
    offset = sum(len(x) + 1 for x in lines[:11])
    assert t.problems[0].offset == offset


def test_bom_and_blank_lines(tmp_path: Path) -> None:
    p = tmp_path / "x.jsonl"
    p.write_bytes(
        b'\xef\xbb\xbf{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"hi"}}\n\n\n'
    )
    t = Transcript.load(p)
    assert len(t.rows) == 1 and not t.problems
    assert t.rows[0].offset == 3


def test_torn_tail_kept_out_and_reread(tmp_path: Path) -> None:
    p = tmp_path / "x.jsonl"
    p.write_bytes(b'{"type":"user","uuid":"u1","parentUuid":null}\n{"type":"assistant","uu')
    r = read_transcript(p)
    assert len(r.rows) == 1 and r.unknown_tail is not None and r.unknown_tail.line == 1
    assert not r.problems
    with open(p, "ab") as fh:
        fh.write(b'id":"a1","parentUuid":"u1"}\n')
    r2 = read_transcript(p, r.state)
    assert [row.uuid for row in r2.rows] == ["a1"]
    assert r2.rows[0].line == 1 and r2.rows[0].offset == 46
    assert r2.state == ReadState(p.stat().st_size, 2, b"")


def test_unterminated_row_is_provisional(tmp_path: Path) -> None:
    p = tmp_path / "x.jsonl"
    p.write_bytes(b'{"type":"user","uuid":"u1","parentUuid":null}')
    r = read_transcript(p)
    assert r.provisional is not None and r.rows == [r.provisional]
    with open(p, "ab") as fh:
        fh.write(b'\n{"type":"user","uuid":"u2","parentUuid":"u1"}\n')
    r2 = read_transcript(p, r.state)
    assert [row.uuid for row in r2.rows] == ["u1", "u2"] and [row.line for row in r2.rows] == [0, 1]


def test_unknown_types_and_fields_kept(tmp_path: Path) -> None:
    p = tmp_path / "x.jsonl"
    p.write_text(
        '{"type":"brand-new-type","uuid":"n1","parentUuid":null,"whatever":[1,2]}\n'
        '{"type":"user","uuid":"u1","parentUuid":"n1","message":{"role":"user","content":"hi"},"newField":1}\n'
    )
    t = Transcript.load(p)
    assert [r.type for r in t.rows] == ["brand-new-type", "user"]
    assert resume(p).messages[0]["content"] == [{"type": "text", "text": "hi"}]


def test_duplicate_uuid_later_value_earlier_position(tmp_path: Path) -> None:
    p = tmp_path / "x.jsonl"
    p.write_text(
        '{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"first"}}\n'
        '{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"role":"assistant","id":"m1","content":[{"type":"text","text":"ok"}]}}\n'
        '{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"second"}}\n'
    )
    t = Transcript.load(p)
    assert t.nodes["u1"].line == 2 and t.nodes["u1"].order == 0
    assert len(t.duplicates) == 1
    r = resume(p)
    assert r.messages[0]["content"][0]["text"] == "second"
    assert r.chain.leaf is not None and r.chain.leaf.uuid == "a1"
