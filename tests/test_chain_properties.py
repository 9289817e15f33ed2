"""Property tests: random trees, parallel tool calls, cycles and garbage lines."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage.resume import resume
from storage.transcript import Transcript

ROW_KINDS = st.sampled_from(["user", "assistant", "attachment", "system", "progress", "garbage", "meta"])


@st.composite
def transcripts(draw: st.DrawFn) -> list[str]:
    n = draw(st.integers(1, 40))
    lines: list[str] = []
    uuids: list[str] = []
    for i in range(n):
        kind = draw(ROW_KINDS)
        if kind == "garbage":
            lines.append(draw(st.sampled_from(["{", "nope", "[1,2]", '{"a":', "", "null"])))
            continue
        if kind == "meta":
            leaf = draw(st.sampled_from(uuids + ["missing"])) if uuids else "missing"
            lines.append(json.dumps({"type": "last-prompt", "lastPrompt": "x", "leafUuid": leaf}))
            continue
        uid = f"u{i}"
        choice = draw(st.integers(0, 10))
        if choice == 0 or not uuids:
            parent = None
        elif choice == 1:
            parent = "nowhere"
        elif choice == 2:
            parent = f"u{draw(st.integers(0, n))}"  # may point forward: cycles are possible
        else:
            parent = draw(st.sampled_from(uuids))
        row: dict = {
            "parentUuid": parent,
            "type": kind,
            "uuid": uid,
            "isSidechain": False,
            "timestamp": f"2026-01-01T00:00:{i % 60:02d}.000Z",
        }
        if kind == "user":
            if uuids and draw(st.booleans()):
                row["message"] = {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": f"t{draw(st.integers(0, n))}", "content": "r"}],
                }
            else:
                row["message"] = {"role": "user", "content": f"prompt {i}"}
        elif kind == "assistant":
            block = draw(st.sampled_from(["text", "tool_use", "thinking"]))
            mid = f"m{draw(st.integers(0, 3))}"
            content = {
                "text": {"type": "text", "text": f"reply {i}"},
                "tool_use": {"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {}},
                "thinking": {"type": "thinking", "thinking": "hm"},
            }[block]
            row["message"] = {"role": "assistant", "id": mid, "content": [content]}
        elif kind == "system" and draw(st.booleans()):
            row["subtype"] = "compact_boundary"
            row["parentUuid"] = None
            row["logicalParentUuid"] = draw(st.sampled_from(uuids)) if uuids else None
        elif kind == "attachment":
            row["attachment"] = {"type": "date"}
            if draw(st.booleans()):
                row["rendered"] = [{"content": "<system-reminder>x</system-reminder>"}]
                row["renderedRole"] = draw(st.sampled_from(["user", "system"]))
        uuids.append(uid)
        lines.append(json.dumps(row))
    return lines


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(transcripts(), st.booleans())
def test_chain_invariants(lines: list[str], torn: bool) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "s.jsonl"
        p.write_text("\n".join(lines) + ("" if torn else "\n"))
        t = Transcript.load(p)
        if not any(r.is_chain_row for r in t.rows):
            return
        r = resume(p)
        uuids = r.chain.uuids
        # no row twice, every row exists, no progress rows, a boundary only first
        assert len(uuids) == len(set(uuids))
        assert all(u in t.nodes for u in uuids)
        assert all(row.type != "progress" for row in r.chain.rows)
        assert all(not row.is_compact_boundary for row in r.chain.rows[1:])
        # each walked row's parent is the previous walked row, unless bridged, recovered or relinked
        extra = {id(x) for x in r.chain.recovered + r.chain.preserved}
        walked = [row for row in r.chain.rows if id(row) not in extra]
        bridged = {child.uuid: adopted.uuid for child, adopted in r.chain.fallbacks}
        for prev, row in zip(walked, walked[1:]):
            parent = bridged.get(row.uuid, row.parent)
            while parent is not None and parent in t.nodes and t.nodes[parent].type == "progress":
                parent = bridged.get(parent, t.nodes[parent].parent)
            assert parent == prev.uuid
        # API form: roles alternate only where merging allows; tool calls are all answered
        answered = {
            b.get("tool_use_id")
            for m in r.messages
            if m["role"] == "user"
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"
        }
        for m in r.messages:
            assert m["role"] in ("user", "assistant", "system")
            if m["role"] == "assistant":
                for b in m["content"]:
                    if b.get("type") == "tool_use":
                        assert b["id"] in answered
        non_system = [m["role"] for m in r.messages if m["role"] != "system"]
        for a, b in zip(non_system, non_system[1:]):
            assert not (a == "user" and b == "user")
        assert (
            not non_system
            or non_system[-1] == "assistant"
            or (
                r.messages[-1]["role"] == "user"
                and r.messages[-1]["content"][-1].get("text") == "Continue from where you left off."
            )
        )
