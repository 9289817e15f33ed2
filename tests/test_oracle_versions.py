"""Sessions written by older CLIs (tests/corpus/versions: 0.2.109 to 2.1.0), as CLI 2.1.328 resumes them.

`session-lsp chain --json` of each file the real CLI 2.1.328 resumed must be the conversation it
sent before its new prompt; the files it refused ("No conversation found") are no sessions; the
model files show which model a resume continues with and what that does to the conversation.
We follow the newest CLI, 2.1.332, which retires models 2.1.328 restored (claude-sonnet-4-5, claude-3-5-sonnet):
the files 2.1.328 went on with such a model are checked against 2.1.332's resume in tests/test_oracle_newest.py
instead, the others here, on the day 2.1.332 resumed them.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from conftest import TESTS
from oracle import differences, load_requests

from server.cli import main
from storage.chain import build_chain
from storage.models import DEFAULT_MODEL, canonical, continued_model, is_restored
from storage.reader import read_entries
from storage.resume import last_model, resume
from storage.transcript import Transcript

ROOT = TESTS / "corpus" / "versions"
REQUESTS = load_requests(ROOT / "api-requests.jsonl")
ORACLES = json.loads((ROOT / "oracles.json").read_text())
MODELS = json.loads((ROOT / "models.json").read_text())
ROLES = json.loads((ROOT / "roles.json").read_text())
"""writer -> role (compacted, parallel, subagent-last, kill, fork) -> the session file that step wrote."""
WRITERS = sorted(ROLES, key=lambda v: tuple(map(int, v.split("."))))
NEWEST_DAY = date(2026, 12, 2)
"""The day CLI 2.1.332 resumed these files (tests/corpus/claude-code-2.1.332/oracles.json)."""


def same_in_newest(model: str) -> bool:
    """Whether the newest CLI, on NEWEST_DAY, goes on with the model 2.1.328 continued with (so sends the same)."""
    return canonical(model) == DEFAULT_MODEL or is_restored(model, on=NEWEST_DAY)


ALL_RESUMED = sorted(rel for rel, info in ORACLES.items() if info["request"] is not None)
RESUMED = [rel for rel in ALL_RESUMED if same_in_newest(REQUESTS[ORACLES[rel]["request"]]["model"])]
"""The files 2.1.328 resumed as 2.1.332 does (the 16 of 2.0.0, 2.0.77 and 2.1.0 went on with claude-sonnet-4-5)."""
MODELS_SAME = [e for e in MODELS if same_in_newest(e["continuedWith"])]
REFUSED = sorted(rel for rel, info in ORACLES.items() if info["request"] is None)


def sent_before_prompt(request: dict[str, Any], session_id: str) -> list[dict[str, Any]]:
    """What the CLI sent ahead of the user message that holds its new prompt `ORACLE <id>`."""
    messages = request["messages"]
    at = max(
        i
        for i, m in enumerate(messages)
        if m["role"] == "user" and any(b.get("text", "").strip() == f"ORACLE {session_id}" for b in m["content"])
    )
    return messages[:at]


def chain_json(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["chain", str(path), "--json", "--projects-dir", str(path.parent.parent)]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("rel", RESUMED, ids=lambda r: r.split("/")[0][12:] + ":" + Path(r).stem[:8])
def test_chain_json_is_what_2_1_328_sent(rel: str, capsys: pytest.CaptureFixture[str]) -> None:
    info = ORACLES[rel]
    request = REQUESTS[info["request"]]
    out = chain_json(ROOT / rel, capsys)
    assert differences(out["messages"], sent_before_prompt(request, info["sessionId"])) == []


@pytest.mark.parametrize("rel", RESUMED, ids=lambda r: r.split("/")[0][12:] + ":" + Path(r).stem[:8])
def test_resume_continues_with_the_model_2_1_328_chose(rel: str) -> None:
    """2.1.328 kept the model of 2.0.0's to 2.1.0's replies (claude-sonnet-4-5) and took its default for those
    of 0.2.109 to 1.0.128 (claude-3-7-sonnet, claude-sonnet-4)."""
    path = ROOT / rel
    entries = read_entries(path, build_chain(Transcript.load(path)).rows)
    assert canonical(continued_model(entries, on=NEWEST_DAY)) == canonical(REQUESTS[ORACLES[rel]["request"]]["model"])


def _file(writer: str, role: str) -> Path:
    return next(
        ROOT / rel
        for rel, info in ORACLES.items()
        if info["writer"] == writer and rel.endswith(f"/{ROLES[writer][role]}.jsonl")
    )


def test_every_old_session_was_resumed() -> None:
    """Every session file of each writer that 2.1.328 resumed (the corpus is what the tests say): before 2.0
    each resume wrote a new file (a copy of the conversation), from 2.0 on it appends to the same one."""
    assert len(RESUMED) == len(ALL_RESUMED) - 16
    writers = [ORACLES[rel]["writer"] for rel in ALL_RESUMED]
    counts = {writer: writers.count(writer) for writer in WRITERS}
    assert counts == {"0.2.109": 13, "1.0.0": 13, "1.0.51": 13, "1.0.128": 4, "2.0.0": 6, "2.0.77": 4, "2.1.0": 6}
    for writer in WRITERS:
        assert all(
            ORACLES[rel]["request"] is not None for rel in ORACLES if rel.endswith(tuple(ROLES[writer].values()))
        )


@pytest.mark.parametrize("writer", WRITERS)
def test_old_task_calls_go_as_agent(writer: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The session that ends with a subagent ends with its Task call and result (2.1.328 sent `Agent`)."""
    path = _file(writer, "subagent-last")
    assert '"name":"Task"' in path.read_text()
    messages = chain_json(path, capsys)["messages"]
    names = [b["name"] for m in messages for b in m["content"] if b.get("type") == "tool_use"]
    assert names[-1] == "Agent" and "Task" not in names


def test_other_old_tool_names_stay(capsys: pytest.CaptureFixture[str]) -> None:
    """`KillBash` (called in 1.0.128's session, which has no such tool) and `KillShell` (2.0.x, 2.1.0) went out
    under their own names, though the CLI's table of legacy names maps them to `TaskStop` (0.2.109, 1.0.0 and
    1.0.51 have no such tool and were not asked)."""
    sent = {}
    for writer in WRITERS:
        if "kill" in ROLES[writer]:
            messages = chain_json(_file(writer, "kill"), capsys)["messages"]
            sent[writer] = [b["name"] for m in messages for b in m["content"] if b.get("type") == "tool_use"]
    assert sent == {"1.0.128": ["KillBash"], "2.0.0": ["KillShell"], "2.0.77": ["KillShell"], "2.1.0": ["KillShell"]}


@pytest.mark.parametrize("rel", REFUSED, ids=lambda r: Path(r).stem[:8])
def test_refused_files_are_no_sessions(rel: str, capsys: pytest.CaptureFixture[str]) -> None:
    info = ORACLES[rel]
    assert "No conversation found" in info["stderr"] + info["stdout"]
    with pytest.raises(SystemExit) as refused:
        main(["chain", str(ROOT / rel), "--json", "--projects-dir", str((ROOT / rel).parent.parent)])
    assert refused.value.code == 2 and "no conversation" in capsys.readouterr().err
    projects = ROOT / rel.split("/")[0] / "projects"
    assert main(["list", "--projects-dir", str(projects), "--json"]) == 0
    listed = {s["sessionId"] for s in json.loads(capsys.readouterr().out)}
    assert info["sessionId"] not in listed


@pytest.mark.parametrize("writer", WRITERS)
def test_list_is_the_resumable_sessions(writer: str, capsys: pytest.CaptureFixture[str]) -> None:
    projects = ROOT / f"claude-code-{writer}" / "projects"
    assert main(["list", "--projects-dir", str(projects), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    resumed = {ORACLES[rel]["sessionId"] for rel in ALL_RESUMED if ORACLES[rel]["writer"] == writer}
    assert {s["sessionId"] for s in listed} == resumed
    # 2.0.77 and 2.1.0 wrote each subagent to an agent file (sessions 1 and 3 ran one), and many `Warmup`
    # agent files, which are nobody's subagents; the others kept their subagents inline
    subagents = {s["sessionId"]: len(s["subagents"]) for s in listed}
    expected = dict.fromkeys(subagents, 0)
    if writer in ("2.0.77", "2.1.0"):
        expected.update({ROLES[writer]["compacted"]: 1, ROLES[writer]["subagent-last"]: 1})
    assert subagents == expected
    for item in listed:  # every resumable session has a title, messages and a priced usage
        assert item["title"] and item["messageCount"] > 0 and item["usage"]["costUSD"] > 0


@pytest.mark.parametrize("entry", MODELS_SAME, ids=lambda e: ",".join(e["replies"]))
def test_model_a_resume_continues_with(entry: dict[str, Any]) -> None:
    path = ROOT / entry["path"]
    request = REQUESTS[entry["request"]]
    entries = read_entries(path, build_chain(Transcript.load(path)).rows)
    assert canonical(continued_model(entries, on=NEWEST_DAY)) == canonical(entry["continuedWith"])
    restored = entry["continuedWith"] if "claude-opus-5-5" in entry["replies"] else None
    if entry["continuedWith"] != DEFAULT_MODEL:
        restored = entry["continuedWith"]
    assert last_model(path, on=NEWEST_DAY) == restored
    ours = resume(path, effort_statement=True, on=NEWEST_DAY).messages
    assert differences(ours, sent_before_prompt(request, entry["sessionId"])) == []


@pytest.mark.parametrize("writer", WRITERS)
def test_partial_list_agrees(writer: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`list --partial` (heads and tails only) gives every field it does not leave pending as the whole listing."""
    projects = str(ROOT / f"claude-code-{writer}" / "projects")
    assert main(["list", "--projects-dir", projects, "--json"]) == 0
    whole = {s["sessionId"]: s for s in json.loads(capsys.readouterr().out)}
    assert main(["list", "--partial", "--projects-dir", projects, "--json"]) == 0
    partial = {s["sessionId"]: s for s in json.loads(capsys.readouterr().out)}
    assert partial.keys() == whole.keys()
    for sid, item in partial.items():
        kept = set(item) - set(item.get("pending") or []) - {"partial", "pending"}
        assert {k: item[k] for k in kept} == {k: whole[sid][k] for k in kept}
