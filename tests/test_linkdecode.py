"""Typed partial decoding of link fields: the same rows as a full decode, and bodies only for the chain.

Every line of the three real corpora, a set of odd shapes and random entries go through both decoders:
`row_from_line` either gives exactly the row `row_from_entry` builds from the full decode (as the CLI
decodes a line: orjson, with bytes that are not UTF-8 read as U+FFFD and numbers beyond a double read),
or declines (None) and leaves the line to it; it never accepts a line the full decode rejects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.jsonline import loads_line
from storage.linkdecode import row_from_line
from storage.reader import read_entry
from storage.resume import resume
from storage.rows import row_from_entry

CORPORA = Path(__file__).resolve().parent / "corpus"


def full_row(raw: bytes) -> Any:
    """The row of a full decode, as the CLI decodes lines (invalid UTF-8 as U+FFFD, `1e999` as Infinity)."""
    try:
        entry = loads_line(raw)[0]
    except ValueError:  # what the CLI rejects too
        return "rejected"
    return row_from_entry(entry, 7, 100, len(raw)) if isinstance(entry, dict) else "not an object"


def check_line(raw: bytes) -> bool:
    """True when the fast decoder took the line itself."""
    fast = row_from_line(raw, 7, 100)
    if fast is None:
        return False
    assert fast == full_row(raw), raw[:300]
    return True


def test_every_corpus_line_decodes_to_the_same_row() -> None:
    taken = total = 0
    for path in sorted(p for p in CORPORA.rglob("*.jsonl") if p.name != "api-requests.jsonl"):
        for raw in path.read_bytes().split(b"\n")[1:]:
            if raw.strip():
                total += 1
                taken += check_line(raw)
    assert total > 500
    assert taken >= total * 0.95  # the fast path is the common path


ODD = [
    b'{"type":"user","uuid":"u","parentUuid":null,"x":"\xff\xfe"}',  # invalid UTF-8 in a skipped body
    b'{"type":5,"uuid":"u"}',
    b'{"type":"user","uuid":["u"]}',
    b'{"type":"user","uuid":"u","isSidechain":"yes"}',
    b'{"type":"user","uuid":"u","isSidechain":true,"isMeta":true,"isCompactSummary":false}',
    b'{"type":"user","uuid":"u","message":"hello"}',
    b'{"type":"user","uuid":"u","message":{"content":["text", {"type":"tool_result","tool_use_id":"t1"}]}}',
    b'{"type":"user","uuid":"u","message":{"content":[{"type":"tool_result","tool_use_id":7}]}}',
    b'{"type":"user","uuid":"u","message":{"id":"m","content":[{"type":"tool_use","id":"t1"},'
    b'{"type":"server_tool_use","id":"t2"},{"type":"tool_result","tool_use_id":"t3"}]}}',
    b'{"type":"user","uuid":"u","message":{"content":[{"type":"tool_result","tool_use_id":"t"}]},'
    b'"toolUseResult":{"agentId":"a1","status":"async_launched"}}',
    b'{"type":"user","uuid":"u","message":{"content":[{"type":"tool_result","tool_use_id":"t"}]},'
    b'"toolUseResult":{"agentId":3}}',
    b'{"type":"user","uuid":"u","message":{"content":[{"type":"tool_result","tool_use_id":"t"}]},'
    b'"toolUseResult":"Error: no such file"}',
    b'{"type":"user","uuid":"u","message":{"content":[{"type":"tool_result","tool_use_id":"t"}]},'
    b'"toolUseResult":[{"type":"text","text":"x"}]}',
    b'{"type":"user","uuid":"u","message":{"content":[{"type":"tool_result","tool_use_id":"t"}]},"toolUseResult":12}',
    b'{"type":"user","uuid":"u","forkedFrom":{"sessionId":"s","messageUuid":"m"}}',
    b'{"type":"user","uuid":"u","forkedFrom":"s"}',
    b'{"type":"user","uuid":"u","forkedFrom":null}',
    b'{"type":"system","subtype":"compact_boundary","uuid":"c","compactMetadata":{"preservedSegment":'
    b'{"anchorUuid":"a","headUuid":"h","tailUuid":"t"},"preservedMessages":{"uuids":["x",1]}}}',
    b'{"type":"system","subtype":"compact_boundary","uuid":"c","compactMetadata":"odd"}',
    b'{"type":"system","subtype":7,"uuid":"c"}',
    b'{"type":"summary","leafUuid":"l","logicalParentUuid":"p","agentId":"a","sourceToolAssistantUUID":"s"}',
    b'{"type":"user","uuid":"a","uuid":"b","sessionId":"s"}',
    b'["not", "an", "object"]',
    b'{"type":"user","uuid":"u"} trailing',
    b'{"type":"user","uuid":"u\\u0000\\ud83d\\ude00"}',
    b'{"type":"user","uuid":"u","x":"\\ud800"}',
    b'{"type":"user","uuid":"\xe9t\xc3\xa9"}',
]


@pytest.mark.parametrize("raw", ODD)
def test_odd_lines_agree_or_fall_back(raw: bytes) -> None:
    check_line(raw)
    if full_row(raw) in ("rejected", "not an object"):
        assert row_from_line(raw, 7, 100) is None


def test_bytes_that_are_not_utf8_are_read_as_the_cli_reads_them(tmp_path: Path) -> None:
    raw = b'{"type":"user","uuid":"u","parentUuid":null,"message":{"role":"user","content":"caf\xe9 \xff!"}}'
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(raw)
    skipped = b'{"type":"user","note":"\xff","uuid":"u","parentUuid":null}'
    assert row_from_line(skipped, 1, 0) is not None  # in a body msgspec skips: the fast path takes it
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"type":"mode","mode":"normal"}\n' + raw + b"\n")  # in a kept field: the full decode
    resumed = resume(path)
    assert resumed.chain.uuids == ["u"]
    assert resumed.messages[0]["content"][0]["text"] == "caf\ufffd \ufffd!"


def test_a_number_beyond_a_double_is_read_as_json_parse_reads_it(tmp_path: Path) -> None:
    raw = b'{"type":"user","uuid":"u","parentUuid":null,"message":{"role":"user","content":"hi"},"cost":1e999}'
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(raw)
    row = row_from_line(raw, 1, 0)
    assert row is not None and row == row_from_entry(json.loads(raw), 1, 0, len(raw))
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"type":"mode","mode":"normal"}\n' + raw + b"\n")
    resumed = resume(path)
    assert resumed.chain.uuids == ["u"]
    assert read_entry(path, resumed.chain.rows[0])["cost"] == float("inf")


def test_odd_lines_mostly_take_the_fast_path() -> None:
    assert sum(check_line(raw) for raw in ODD) >= 14


scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5), st.floats(allow_nan=False))
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
keys = st.sampled_from(
    [
        "type",
        "uuid",
        "parentUuid",
        "sessionId",
        "timestamp",
        "isSidechain",
        "logicalParentUuid",
        "subtype",
        "leafUuid",
        "agentId",
        "isMeta",
        "isCompactSummary",
        "sourceToolAssistantUUID",
        "forkedFrom",
        "toolUseResult",
        "compactMetadata",
        "message",
        "other",
    ]
)
blocks = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {"type": st.sampled_from(["tool_use", "server_tool_use", "tool_result", "text"])},
            optional={
                "id": st.one_of(st.text(max_size=3), st.integers()),
                "tool_use_id": st.one_of(st.text(max_size=3), st.none()),
                "input": values,
            },
        ),
        values,
    ),
    max_size=3,
)
messages = st.fixed_dictionaries(
    {},
    optional={
        "id": st.one_of(st.text(max_size=3), st.integers()),
        "content": st.one_of(st.text(max_size=3), blocks, values),
    },
)


@settings(max_examples=400, deadline=None)
@given(
    st.dictionaries(keys, st.one_of(values, messages, st.text(max_size=4)), max_size=10), st.booleans(), st.booleans()
)
def test_random_entries_agree(entry: dict[str, Any], as_compact: bool, ascii_only: bool) -> None:
    if as_compact:
        entry = {**entry, "type": "system", "subtype": "compact_boundary"}
    # raw UTF-8 (lone surrogates become invalid bytes) or \u escapes; integers of any size
    check_line(json.dumps(entry, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass"))


def test_resume_decodes_in_full_only_the_rows_it_returns(monkeypatch: pytest.MonkeyPatch) -> None:
    path = (
        CORPORA / "claude-code-2.1.328" / "projects" / "-Users-me-shop" / "11111111-1111-4111-8111-111111111111.jsonl"
    )
    lines = [raw for raw in path.read_bytes().split(b"\n") if raw.strip()]
    decoded: list[bytes] = []
    real_loads = orjson.loads

    def counting_loads(data: Any) -> Any:
        decoded.append(bytes(data))
        return real_loads(data)

    monkeypatch.setattr(orjson, "loads", counting_loads)
    resumed = resume(path)
    monkeypatch.undo()
    chain_lines = {lines[row.line] for row in resumed.chain.rows}
    whole_lines = [raw for raw in decoded if raw in set(lines)]
    assert len(resumed.chain.rows) < len(lines)
    assert set(whole_lines) - {lines[0]} <= chain_lines  # the first line always goes the lenient way (BOM)
    assert len(whole_lines) <= len(resumed.chain.rows) + 1
