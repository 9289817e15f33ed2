"""What the newest CLI, 2.1.332, writes and sends on resume (tests/corpus/claude-code-2.1.332).

Every file it resumed (its own sessions of every role, ours, the 2.1.328 corpus, the versions corpus, the model
files) must give, as we read it, the conversation 2.1.332 sent before its new prompt, and the model it went on
with. Where 2.1.328 sent something else for the same file, the difference is the one README names (the models
2.1.332 retires), and nothing else.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from conftest import TESTS
from oracle import differences, load_requests, oracle_requests
from test_oracle_versions import sent_before_prompt

from server.cli import main
from storage.chain import build_chain
from storage.lookup import find_by_title
from storage.models import DEFAULT_MODEL, canonical, continued_model, is_restored
from storage.reader import read_entries
from storage.resume import last_model, resume
from storage.transcript import Transcript

CORPUS = TESTS / "corpus"
ROOT = CORPUS / "claude-code-2.1.332"
REQUESTS = load_requests(ROOT / "api-requests.jsonl")
ORACLES: dict[str, dict[str, Any]] = json.loads((ROOT / "oracles.json").read_text())
ROLES: dict[str, str] = json.loads((ROOT / "roles.json").read_text())
OWN = sorted(rel for rel in ORACLES if rel.startswith("claude-code-2.1.332/"))
VERSIONS = load_requests(CORPUS / "versions" / "api-requests.jsonl")
VERSIONS_ORACLES = json.loads((CORPUS / "versions" / "oracles.json").read_text())
VERSIONS_MODELS = {e["path"]: e for e in json.loads((CORPUS / "versions" / "models.json").read_text())}
NO_LONGER_RESTORED = {"claude-sonnet-4-5", "claude-3-5-sonnet"}
"""Restored by 2.1.328, retired by 2.1.332 (its table: 2026-11-30 and 2025-10-28)."""


def _id(rel: str) -> str:
    parts = rel.split("/")
    return f"{parts[-4] if parts[0] == 'versions' else parts[0]}:{Path(rel).stem[:8]}"


def _day(rel: str) -> date:
    return date.fromisoformat(ORACLES[rel]["date"])


def _sent(rel: str) -> list[dict[str, Any]]:
    info = ORACLES[rel]
    return sent_before_prompt(REQUESTS[info["request"]], info["sessionId"])


def _matches(ours: list[dict[str, Any]], request: dict[str, Any], prompt: str) -> list[str]:
    """How `ours` differs from what `request` sent before `prompt`. A conversation that ends in a user message
    with no reply (a slash command: the CLI adds no "No response requested." after it) gets the prompt merged
    into that message: then our last message must be that message's blocks before the prompt (less the "\n" a text
    block gets when the prompt's text block meets it)."""
    messages = request["messages"]
    at = max(
        i
        for i, m in enumerate(messages)
        if m["role"] == "user" and any(b.get("text", "").strip() == prompt for b in m["content"])
    )
    expected = messages[:at]
    if ours and ours[-1]["role"] == "user":
        blocks = messages[at]["content"]
        cut = next(k for k, b in enumerate(blocks) if b.get("text", "").strip() == prompt)
        kept = blocks[:cut]
        if kept and kept[-1].get("type") == "text" and kept[-1]["text"].endswith("\n"):  # the join's "\n"
            kept = [*kept[:-1], {**kept[-1], "text": kept[-1]["text"].removesuffix("\n")}]
        expected = [*expected, {"role": "user", "content": kept}]
    return differences(ours, expected)


def _matches_oracle(ours: list[dict[str, Any]], rel: str) -> list[str]:
    info = ORACLES[rel]
    return _matches(ours, REQUESTS[info["request"]], f"ORACLE {info['sessionId']}")


def test_every_file_was_resumed() -> None:
    """2.1.332 resumed all 97 files: its 10 session files and our 2 forks, the 4 of 2.1.328, 59 old ones, 22 model files."""
    assert all(info["request"] is not None for info in ORACLES.values())
    writers = [info["writer"] for info in ORACLES.values()]
    counts = {w: writers.count(w) for w in sorted(set(writers))}
    assert counts == {
        "0.2.109": 13,
        "1.0.0": 13,
        "1.0.51": 13,
        "1.0.128": 4,
        "2.0.0": 6,
        "2.0.77": 4,
        "2.1.0": 6,
        "2.1.328": 4,
        "2.1.332": 12,
        "script": 22,
    }
    assert {Path(rel).stem for rel in OWN} == set(ROLES.values())


@pytest.mark.parametrize("rel", sorted(ORACLES), ids=_id)
def test_resume_is_what_2_1_332_sent(rel: str) -> None:
    path = CORPUS / rel
    assert _matches_oracle(resume(path, effort_statement=True, on=_day(rel)).messages, rel) == []
    entries = read_entries(path, build_chain(Transcript.load(path)).rows)
    sent_model = REQUESTS[ORACLES[rel]["request"]]["model"]
    assert canonical(continued_model(entries, on=_day(rel))) == canonical(sent_model)
    assert canonical(last_model(path, on=_day(rel)) or DEFAULT_MODEL) == canonical(sent_model)


@pytest.mark.parametrize("rel", OWN, ids=_id)
def test_chain_json_of_its_sessions(rel: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`session-lsp chain --json` (today's rules) of each session 2.1.332 wrote, and of ours, is what it sent."""
    path = CORPUS / rel
    assert main(["chain", str(path), "--json", "--projects-dir", str(path.parent.parent)]) == 0
    assert _matches_oracle(json.loads(capsys.readouterr().out)["messages"], rel) == []


def test_2_1_332_reads_what_session_lsp_wrote() -> None:
    """A session we recorded from scratch and one we appended a prompt, parallel reads, a subagent and a Chinese
    prompt to, and our two forks of the latter: 2.1.332 sent every turn we wrote, as our own API form has it."""
    for role, turns in (("ours", 6), ("appended", 8)):
        (rel,) = [r for r in OWN if Path(r).stem == ROLES[role]]
        sent = _sent(rel)
        assert sum(m["role"] == "assistant" for m in sent) == turns
        texts = [b.get("text") for m in sent for b in m["content"]]
        assert "检查审计日志 — done?" in texts and "I read it (2 tool results)." in texts
    # our forks of the appended session: the whole one sent as the source, the one at a reply (which ends on a tool
    # result, so the CLI closed it with "No response requested.") up to it
    path = {Path(r).stem: CORPUS / r for r in OWN}
    source = _sent(next(r for r in OWN if Path(r).stem == ROLES["appended"]))
    whole = _sent(next(r for r in OWN if Path(r).stem == ROLES["our-fork"]))
    at = _sent(next(r for r in OWN if Path(r).stem == ROLES["our-fork-at"]))
    assert (
        differences(whole, source) == [] and differences(at[:-1], source[: len(at) - 1]) == [] and len(at) < len(source)
    )
    assert '"forkedFrom"' in path[ROLES["our-fork-at"]].read_text(encoding="utf-8")


def test_what_2_1_332_resumes_of_the_rewind_the_kill_and_the_fork(capsys: pytest.CaptureFixture[str]) -> None:
    by_role = {role: next(CORPUS / r for r in OWN if Path(r).stem == sid) for role, sid in ROLES.items()}
    rewound = resume(by_role["rewound"]).messages
    prompts = [
        b["text"] for m in rewound if m["role"] == "user" for b in m["content"] if "question" in b.get("text", "")
    ]
    assert prompts == ["first question", "rewound question"]  # the second question is off the resumed branch
    killed = resume(by_role["killed"]).messages
    assert killed[-2]["content"] == [{"type": "text", "text": "SLOW a slow reply"}]
    assert killed[-1]["content"] == [{"type": "text", "text": "No response requested."}]
    fork = build_chain(Transcript.load(by_role["fork"]))
    source = build_chain(Transcript.load(by_role["compacted"]))
    assert len(set(fork.uuids) & set(source.uuids)) >= 5
    assert main(["list", "--projects-dir", str(by_role["named"].parent.parent), "--json"]) == 0
    titles = {s["sessionId"]: s["title"] for s in json.loads(capsys.readouterr().out)}
    assert titles[ROLES["named"]] == "my renamed session" and titles[ROLES["ours"]] == "from scratch"
    assert set(titles) == set(ROLES.values())


def test_new_row_fields_of_2_1_332() -> None:
    """2.1.332 writes `rowSource` (`local` on typed prompts and command rows, `harness` on the command caveat,
    `recorded` on task notifications and recorded reminders) and `sentAtMs` on user rows, `echoWireToolInputs` and
    `thread` on `api-request` rows, `modelNotNamed` in a subagent's `.meta.json`; nothing else in its rows' keys
    differs from 2.1.328's (same scenarios, scripts/make_newest_corpus.py --writer 2.1.328)."""
    seen: dict[str, set[str]] = {}
    for path in (ROOT / "projects").rglob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row.get("version") != "2.1.332":
                continue
            for key in ("rowSource", "sentAtMs", "echoWireToolInputs", "thread"):
                if key in row:
                    seen.setdefault(key, set()).add(row["type"])
            if "rowSource" in row:
                assert row["rowSource"] in ("local", "harness", "recorded")
    assert seen == {
        "rowSource": {"user"},
        "sentAtMs": {"user"},
        "echoWireToolInputs": {"api-request"},
        "thread": {"api-request"},
    }
    # a subagent's .meta.json says that nothing named its model (`modelNotNamed`); we write none and read none of it
    metas = [json.loads(p.read_text(encoding="utf-8")) for p in (ROOT / "projects").rglob("*.meta.json")]
    cli_written = [m for m in metas if "isBuiltIn" in m]  # ours hold agentType, description, toolUseId
    assert len(cli_written) == 2 and all(m["modelNotNamed"] is True for m in cli_written)


def _versions_pairs() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(file, what 2.1.328 sent, what 2.1.332 sent) for every file of the versions corpus both resumed."""
    pairs = []
    for rel, info in sorted(ORACLES.items()):
        if not rel.startswith("versions/"):
            continue
        inner = rel.removeprefix("versions/")
        old = VERSIONS_ORACLES.get(inner, VERSIONS_MODELS.get(inner))
        assert old is not None, rel
        pairs.append((rel, VERSIONS[old["request"]], REQUESTS[info["request"]]))
    return pairs


def test_2_1_332_resumes_old_files_as_2_1_328_did_but_for_retired_models() -> None:
    """Of the 81 old files, 2.1.332 sent the same conversation and model as 2.1.328 for all but those whose last
    reply came from a model 2.1.332 retires (every 2.0.x and 2.1.0 session, answered by claude-sonnet-4-5, and 4
    model files): it goes on with its default instead, with system messages and the effort carrier."""
    changed = []
    for rel, old, new in _versions_pairs():
        sid = ORACLES[rel]["sessionId"]
        before, after = sent_before_prompt(old, sid), sent_before_prompt(new, sid)
        if canonical(old["model"]) == canonical(new["model"]):
            assert differences(before, after) == [], rel
            continue
        changed.append(rel)
        assert canonical(old["model"]) in NO_LONGER_RESTORED and new["model"] == DEFAULT_MODEL
        replies = lambda messages: [m for m in messages if m["role"] == "assistant"]  # noqa: E731
        assert replies(before) == replies(after) and any(m["role"] == "system" for m in after), rel
        assert not any(m["role"] == "system" for m in before), rel
    writers = sorted({ORACLES[rel]["writer"] for rel in changed})
    assert writers == ["2.0.0", "2.0.77", "2.1.0", "script"] and len(changed) == 16 + 4


def test_retirement_is_by_day() -> None:
    """claude-opus-4-5 is in 2.1.332's table with 2027-01-22: restored before that day, not from it on."""
    assert is_restored("claude-opus-4-5-20251101", on=date(2027, 1, 21))
    assert not is_restored("claude-opus-4-5-20251101", on=date(2027, 1, 22))
    assert not is_restored("claude-sonnet-4-5-20250929", on=date(2026, 11, 30))
    assert is_restored("claude-sonnet-4-5-20250929", on=date(2026, 11, 29))
    assert not is_restored("claude-opus-4-1", on=date(2020, 1, 1))  # remapped: never restored


def test_resume_by_title_finds_the_session_2_1_332_did() -> None:
    """`-n` then `/rename` (custom-title and agent-name rows, as 2.1.328 writes them): `--resume "<title>"` took the
    renamed session, and so does our lookup; what it sent is that session's conversation."""
    by_title = json.loads((ROOT / "by-title.json").read_text())
    work = ORACLES[next(r for r in OWN if Path(r).stem == ROLES["named"])]["cwd"]
    found = find_by_title(ROOT / "projects", by_title["title"], cwd=work)
    assert found.stem == by_title["sessionId"] == ROLES["named"]
    # /rename also left a sidecar; the CLI's lookup by title ignored it (an edited copy: only the rows' title found
    # the session), as ours does
    sidecar = json.loads((found.parent / found.stem / "custom-title.json").read_text())
    assert sidecar["customTitle"] == by_title["title"] and sidecar["by"] == "user"
    request = REQUESTS[by_title["request"]]
    assert _matches(resume(found, effort_statement=True).messages, request, "BY TITLE") == []


def test_a_session_ending_on_a_slash_command() -> None:
    """The named session ends on `/rename`: its caveat, its `<command-name>` row and its output (a `system`
    `local_command` row, which `last-prompt` names). 2.1.332 (and 2.1.328) sent all three as user text and no "No
    response requested." after them; the new prompt joined that message."""
    (rel,) = [r for r in OWN if Path(r).stem == ROLES["named"]]
    ours = resume(CORPUS / rel).messages
    assert ours[-1]["role"] == "user"
    texts = [b["text"] for b in ours[-1]["content"]]
    assert [t.split(">", 1)[0] + ">" for t in texts] == [
        "<local-command-caveat>",
        "<command-name>",
        "<local-command-stdout>",
    ]
    assert build_chain(Transcript.load(CORPUS / rel)).rows[-1].is_local_command


def test_2_1_332_resumes_the_2_1_328_corpus_as_2_1_328_did() -> None:
    """The 4 sessions of tests/corpus/claude-code-2.1.328 (subagent, compaction, parallel calls, fork, -n): what
    2.1.332 sent on resuming each is what 2.1.328 sent (each file ends with 2.1.328's own `ORACLE` turn: its request
    is the conversation less that turn's reply)."""
    old = oracle_requests(CORPUS / "claude-code-2.1.328" / "api-requests.jsonl")
    rels = [rel for rel in ORACLES if rel.startswith("claude-code-2.1.328/")]
    assert len(rels) == 4
    for rel in rels:
        sid = ORACLES[rel]["sessionId"]
        sent = _sent(rel)
        assert sent[-1] == {"role": "assistant", "content": [{"type": "text", "text": f"echo: ORACLE {sid}"}]}
        assert differences(sent[:-1], old[sid]["messages"]) == [], rel
