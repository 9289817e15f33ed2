"""The recorder writes what the CLI writes: property tests over random conversations, and the
individual rules of spec section 3."""

from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from writers.conversations import Script, api_form, read_call, reply, result, text  # noqa: E402

from storage.apiform import api_messages  # noqa: E402
from storage.chain import build_chain  # noqa: E402
from storage.errors import InUse  # noqa: E402
from storage.livesession import live_records  # noqa: E402
from storage.paths import subagent_files  # noqa: E402
from storage.reader import read_transcript  # noqa: E402
from storage.recorder import INTERRUPTED, INTERRUPTED_FOR_TOOL_USE, SessionIdInUse, SessionRecorder  # noqa: E402
from storage.resume import resume  # noqa: E402
from storage.transcript import Transcript  # noqa: E402


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def new(tmp: Path, **kw) -> SessionRecorder:  # type: ignore[no-untyped-def]
    kw.setdefault("mark_live", False)
    return SessionRecorder.create(tmp / "config" / "projects", str(tmp), **kw)


step = st.one_of(
    st.tuples(st.just("text"), st.text(min_size=1, max_size=30).filter(lambda s: s.strip())),
    st.integers(min_value=1, max_value=4).flatmap(
        lambda n: st.tuples(st.just("tools"), st.just(n), st.permutations(list(range(n))))
    ),
    st.tuples(st.just("agent"), st.sampled_from(["READ /work/a.txt", "look around"])),
    st.tuples(st.just("compact"), st.text(min_size=1, max_size=40).filter(lambda s: s.strip())),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(step, min_size=1, max_size=8), reopen=st.booleans())
def test_random_conversations_resume_to_their_api_form(steps: list[tuple], reopen: bool) -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        rec = new(tmp, interval=None)
        script = Script(rec)
        half = len(steps) // 2 if reopen else len(steps)
        for s in steps[:half]:
            script.play(s)
        if reopen and half:  # resume half way: adopt the file and go on
            rec.close()
            rec = SessionRecorder.adopt(rec.path, mark_live=False, interval=None)
            script.rec = rec
        for s in steps[half:]:
            script.play(s)
        rec.close()
        t = Transcript.load(rec.path)
        assert not t.problems and t.torn_tail is None
        assert len({r.uuid for r in t.rows if r.uuid}) == len([r for r in t.rows if r.uuid])
        resumed = resume(rec.path)
        assert resumed.messages == api_form(script.expected)
        # every main-chain row recorded since the last compaction is on the chain
        since = [r for r in t.rows if r.is_chain_row]
        last_boundary = max((i for i, r in enumerate(since) if r.is_compact_boundary), default=0)
        assert {r.uuid for r in since[last_boundary:]} == set(resumed.chain.uuids)
        # subagents: their own files, their own chains
        subs = {s.agent_id: s for s in subagent_files(rec.path)}
        assert set(subs) == set(script.agents)
        for aid, expected in script.agents.items():
            st_ = Transcript.load(subs[aid].path)
            assert all(r.sidechain and r.agent_id == aid for r in st_.rows if r.is_chain_row)
            assert api_messages(subs[aid].path, build_chain(st_)) == api_form(expected)
            assert subs[aid].meta_path is not None


def test_lazy_creation_modes_and_stamps(tmp_path: Path) -> None:
    rec = new(tmp_path, session_id="3f0b1c4e-1111-4111-8111-000000000001", git_branch="main")
    rec.set_title("early title")
    rec.flush()
    assert not rec.path.exists(), "metadata alone must not create the session file"
    uid = rec.record_prompt("hello")
    rec.flush()
    assert stat.S_IMODE(rec.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(rec.path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(rec.path.parent.parent.stat().st_mode) == 0o700
    first, second = rows(rec.path)[:2]
    assert first["type"] == "custom-title"  # held, then written before the first message
    assert list(second)[0] == "parentUuid" and second["parentUuid"] is None and second["uuid"] == uid
    for key, value in {
        "sessionId": rec.session_id,
        "cwd": str(tmp_path),
        "version": "2.1.328",
        "gitBranch": "main",
        "userType": "external",
        "entrypoint": "session-lsp",
        "isSidechain": False,
    }.items():
        assert second[key] == value
    assert second["timestamp"].endswith("Z") and len(second["timestamp"]) == 24
    rec.close()


def test_compact_raw_utf8_and_no_lone_surrogates(tmp_path: Path) -> None:
    rec = new(tmp_path)
    rec.record_prompt("检查 \ud83d\ude00 and a lone \ud800 half")
    rec.close()
    raw = rec.path.read_bytes()
    assert "检查".encode() in raw and b"\\u" not in raw and b", " not in raw.split(b"\n")[0][:40]
    raw.decode("utf-8")  # strict: no encoded surrogates
    prompt = next(r for r in rows(rec.path) if r["type"] == "user")
    assert prompt["message"]["content"] == "检查 😀 and a lone \ufffd half"


def test_parallel_results_hang_off_their_tool_use_rows(tmp_path: Path) -> None:
    rec = new(tmp_path)
    rec.record_prompt("PAR a b")
    calls = [read_call("a"), read_call("b")]
    a_rows = rec.record_assistant(reply([text("Reading them all."), *calls], "tool_use"))
    assert len(a_rows) == 3
    r_rows = rec.record_tool_results([result(calls[1], "B"), result(calls[0], "A")])
    final = rec.record_assistant(reply([text("done")]))
    rec.close()
    by = {r["uuid"]: r for r in rows(rec.path) if "uuid" in r}
    assert {by[u]["message"]["id"] for u in a_rows} == {by[a_rows[0]]["message"]["id"]}
    assert all(by[u]["message"]["usage"]["output_tokens"] == 20 for u in a_rows)
    assert by[r_rows[0]]["parentUuid"] == by[r_rows[0]]["sourceToolAssistantUUID"] == a_rows[2]
    assert by[r_rows[1]]["parentUuid"] == by[r_rows[1]]["sourceToolAssistantUUID"] == a_rows[1]
    assert by[final[0]]["parentUuid"] == r_rows[1]
    assert "toolUseResult" in by[r_rows[0]]


def test_result_without_known_tool_use_has_no_source(tmp_path: Path) -> None:
    rec = new(tmp_path)
    p = rec.record_prompt("x")
    (r,) = rec.record_tool_results([{"type": "tool_result", "tool_use_id": "toolu_unknown", "content": "?"}])
    rec.close()
    row = next(x for x in rows(rec.path) if x.get("uuid") == r)
    assert row["parentUuid"] == p and "sourceToolAssistantUUID" not in row


def test_record_only_new_messages_and_the_prefix_rule(tmp_path: Path) -> None:
    rec = new(tmp_path)
    a = {"type": "user", "uuid": "00000000-0000-4000-8000-00000000000a", "message": {"role": "user", "content": "a"}}
    b = {
        "type": "assistant",
        "uuid": "00000000-0000-4000-8000-00000000000b",
        "message": {"id": "m1", "role": "assistant", "content": [text("b")]},
    }
    c = {"type": "user", "uuid": "00000000-0000-4000-8000-00000000000c", "message": {"role": "user", "content": "c"}}
    d = {"type": "user", "uuid": "00000000-0000-4000-8000-00000000000d", "message": {"role": "user", "content": "d"}}
    assert rec.record_entries([a, b]) == [a["uuid"], b["uuid"]]
    # a leading run of known rows moves the cursor to the last of them ...
    assert rec.record_entries([a, c], parent_hint=None) == [c["uuid"]]
    # ... a known row after a new one does not
    assert rec.record_entries([b, d, a]) == [d["uuid"]]
    rec.close()
    by = {r["uuid"]: r for r in rows(rec.path) if "uuid" in r}
    assert len([r for r in rows(rec.path) if r.get("uuid") == a["uuid"]]) == 1
    assert by[c["uuid"]]["parentUuid"] == a["uuid"]
    assert by[d["uuid"]]["parentUuid"] == b["uuid"]


def test_interruptions_as_the_cli_writes_them(tmp_path: Path) -> None:
    rec = new(tmp_path)
    rec.record_prompt("READ x")
    call = read_call("x")
    rec.record_assistant(reply([call], "tool_use"))
    rec.record_interruption(for_tool_use=True)
    rec.record_prompt("never mind")
    rec.record_interruption()
    rec.close()
    texts = [r["message"]["content"] for r in rows(rec.path) if r.get("type") == "user"]
    assert texts[1][0]["type"] == "tool_result" and texts[1][0]["is_error"] is True
    assert texts[2] == [text(INTERRUPTED_FOR_TOOL_USE)]
    assert texts[4] == [text(INTERRUPTED)]
    flat = json.dumps(resume(rec.path).messages)
    assert INTERRUPTED_FOR_TOOL_USE in flat and INTERRUPTED in flat


def test_metadata_reappended_at_close_and_leaf_kept_current(tmp_path: Path) -> None:
    rec = new(tmp_path)
    rec.set_title("My title")
    rec.set_tag("urgent")
    rec.record_prompt("first")
    rec.record_assistant(reply([text("one")]))
    rec.flush()
    last = rows(rec.path)[-1]
    assert last["type"] == "last-prompt" and last["lastPrompt"] == "first"
    # a big middle: the metadata must still be in the last 64 KiB at close
    for i in range(40):
        rec.record_prompt(f"p{i} " + "x" * 4000)
        rec.record_assistant(reply([text(f"r{i}")]))
    rec.set_cost_state(totalCostUSD=0.5, totalAPIDuration=10)
    leaf = rec.record_assistant(reply([text("end")]))[-1]
    rec.close()
    data = rec.path.read_bytes()
    tail = [json.loads(x) for x in data[-65536:].split(b"\n")[1:] if x]
    types = [r["type"] for r in tail]
    assert types[-4:] == ["last-prompt", "custom-title", "tag", "cost-state"]
    assert tail[-4]["leafUuid"] == leaf and tail[-4]["lastPrompt"].startswith("p39")
    assert tail[-3]["customTitle"] == "My title" and tail[-2]["tag"] == "urgent"


def test_adopt_continues_the_chain_and_seals_a_torn_tail(tmp_path: Path) -> None:
    rec = new(tmp_path)
    rec.record_prompt("one")
    last = rec.record_assistant(reply([text("r1")]))[-1]
    rec.close()
    with open(rec.path, "ab") as fh:
        fh.write(b'{"parentUuid":"torn')
    again = SessionRecorder.adopt(rec.path, mark_live=False)
    assert again.session_id == rec.session_id and again.cursor == last
    u = again.record_prompt("two")
    again.close()
    assert [t.path for t in again.torn_tails] == [rec.path]
    result_ = read_transcript(rec.path)
    assert len(result_.problems) == 1 and result_.unknown_tail is None  # torn line isolated
    by = {r["uuid"]: r for r in rows_ok(rec.path) if "uuid" in r}
    assert by[u]["parentUuid"] == last
    assert [m["content"][0]["text"] for m in resume(rec.path).messages] == [
        "one",
        "r1",
        "two",
        "No response requested.",
    ]


def rows_ok(path: Path) -> list[dict]:
    out = []
    for line in path.read_bytes().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def test_session_id_in_use_and_live_marks(tmp_path: Path) -> None:
    projects = tmp_path / "config" / "projects"
    rec = SessionRecorder.create(projects, str(tmp_path))
    mine = [r for r in live_records(tmp_path / "config") if r.session_id == rec.session_id]
    assert mine and mine[0].kind == "bg" and mine[0].pid == os.getpid()
    rec.record_prompt("hi")
    rec.flush()
    with pytest.raises(SessionIdInUse, match="is already in use"):
        SessionRecorder.create(projects, str(tmp_path), session_id=rec.session_id)
    with pytest.raises(InUse):  # our own lock says so first, naming the holder
        SessionRecorder.adopt(rec.path)
    other = SessionRecorder.create(projects, str(tmp_path))  # a second session: a guard process
    marks = {r.session_id: r for r in live_records(tmp_path / "config")}
    assert marks[other.session_id].pid != os.getpid()
    other.close()
    rec.close()
    assert not [r for r in live_records(tmp_path / "config") if r.session_id in (rec.session_id, other.session_id)]
    SessionRecorder.adopt(rec.path).close()  # free again


def test_subagent_rows_are_not_deduplicated(tmp_path: Path) -> None:
    rec = new(tmp_path)
    p = rec.record_prompt("AGENT x")
    sub = rec.record_subagent("a0123456789abcdef", description="d", tool_use_id="toolu_1")
    # the CLI re-uses uuids of the main file in agent files on purpose
    entry = {"type": "user", "uuid": p, "message": {"role": "user", "content": "x"}}
    assert sub.record_entries([entry]) == [p]
    rec.close()
    agent_rows = rows(sub.path)
    assert agent_rows[0]["uuid"] == p and agent_rows[0]["isSidechain"] is True
    assert agent_rows[0]["agentId"] == "a0123456789abcdef" and agent_rows[0]["parentUuid"] is None
    meta = json.loads(sub.meta_path.read_text())
    assert meta == {"agentType": "general-purpose", "description": "d", "toolUseId": "toolu_1"}
    assert stat.S_IMODE(sub.meta_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(sub.path.parent.stat().st_mode) == 0o700


def test_preserved_segment_survives_compaction(tmp_path: Path) -> None:
    rec = new(tmp_path)
    rec.record_prompt("old")
    rec.record_assistant(reply([text("old reply")]))
    keep_p = rec.record_prompt("keep me")
    keep_a = rec.record_assistant(reply([text("kept")]))
    rec.record_compact_boundary("S", preserved=[keep_p, *keep_a])
    rec.record_prompt("after")
    rec.record_assistant(reply([text("done")]))
    rec.close()
    chain = resume(rec.path).chain
    assert [r.uuid for r in chain.preserved] == [keep_p, *keep_a]
    assert "old" not in json.dumps(resume(rec.path).messages)
