"""Token usage and cost: de-duplication by `message.id`, subagents, `<synthetic>` rows, unknown models,
the price table against the CLI's own cost tally, and the `list --json` / `usage` command output."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import CORPUS, TESTS

from storage.prices import canonical_model, rates_for, response_cost
from storage.usage import file_responses, folder_responses, grouped, session_usage, total

SHOP = CORPUS / "projects" / "-Users-me-shop"
PAR = SHOP / "11111111-1111-4111-8111-111111111111.jsonl"
WITH_AGENT = SHOP / "22222222-2222-4222-8222-222222222222.jsonl"
FORK_COPY = SHOP / "d864acd2-d28b-43ce-b430-2208a10860fe.jsonl"
GENERATED = TESTS / "corpus" / "generated" / "projects"
EXTRA = TESTS / "corpus" / "extra" / "projects"


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server.cli", *args], capture_output=True, text=True, timeout=120, check=False
    )


def assistant_rows(path: Path) -> list[dict]:
    rows = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    return [r for r in rows if r.get("type") == "assistant"]


def test_one_response_split_over_rows_counts_once() -> None:
    rows = assistant_rows(PAR)
    ids = [r["message"]["id"] for r in rows]
    assert len(rows) == 8 and len(set(ids)) == 6  # the parallel-call response is 3 rows
    responses = file_responses(PAR)
    assert [r.message_id for r in responses] == list(dict.fromkeys(ids))
    u = total(responses)
    assert (u.input_tokens, u.output_tokens, u.responses) == (600, 120, 6)


def test_subagent_files_are_billed_to_their_session() -> None:
    own = total(file_responses(WITH_AGENT))
    whole = session_usage(WITH_AGENT)
    assert (own.input_tokens, own.output_tokens) == (500, 100)
    assert (whole.input_tokens, whole.output_tokens, whole.responses) == (700, 140, 7)


def test_synthetic_rows_are_not_responses() -> None:
    path = EXTRA / "-tmp-slsp-extra-work" / "e3333333-3333-4333-8333-333333333333.jsonl"
    rows = assistant_rows(path)
    synthetic = [r for r in rows if r["message"]["model"] == "<synthetic>"]
    assert len(rows) == 4 and len(synthetic) == 1
    responses = file_responses(path)
    assert len(responses) == 3 and "<synthetic>" not in {r.model for r in responses}


def test_cost_matches_the_cli_own_tally() -> None:
    """The CLI 2.1.328 writes `cost-state` rows with its running cost; for sessions whose calls are all
    stored as assistant rows (no compaction or other side calls, no killed turn) ours is the same."""
    cases = [
        GENERATED / "-tmp-slsp-corpus------" / "55555555-5555-4555-8555-555555555555.jsonl",
        GENERATED / "-tmp-slsp-corpus-caf--cr-me" / "66666666-6666-4666-8666-666666666666.jsonl",
        GENERATED / "-tmp-slsp-corpus-other" / "33333333-3333-4333-8333-333333333333.jsonl",
        GENERATED / "-tmp-slsp-corpus-shop" / "22222222-2222-4222-8222-222222222222.jsonl",
        PAR,
        FORK_COPY,
    ]
    for path in cases:
        rows = [orjson.loads(line) for line in path.read_bytes().splitlines() if b'"cost-state"' in line]
        cli_total = [r for r in rows if r.get("type") == "cost-state"][-1]["totalCostUSD"]
        ours = session_usage(path).cost_usd
        assert ours is not None and ours == pytest.approx(cli_total, abs=1e-9), path.name


def test_price_rules() -> None:
    assert canonical_model("claude-sonnet-4-5-20250929") == "claude-sonnet-4-5"
    assert canonical_model("us.anthropic.claude-opus-4-1-20250805-v1:0") == "claude-opus-4-1"
    assert canonical_model("claude-opus-4-20250514") == "claude-opus-4-0"
    assert rates_for("claude-opus-5-5-turbo") is None
    usage = {
        "input_tokens": 1000,
        "output_tokens": 100,
        "cache_read_input_tokens": 10_000,
        "cache_creation_input_tokens": 3000,
        "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 2000},
    }
    # Sonnet 4.5: 3 in, 15 out, 0.30 read, 3.75 5m write, 6 1h write (per million)
    expected = (1000 * 3 + 100 * 15 + 10_000 * 0.3 + 1000 * 3.75 + 2000 * 6) / 1e6
    assert response_cost("claude-sonnet-4-5-20250929", usage) == pytest.approx(expected)
    assert response_cost("claude-sonnet-4-5", {**usage, "inference_geo": "us"}) == pytest.approx(expected * 1.1)
    fast = response_cost("claude-opus-4-6", {"input_tokens": 1_000_000, "speed": "fast"})
    assert fast == pytest.approx(30.0)
    searches = {"input_tokens": 0, "server_tool_use": {"web_search_requests": 3}}
    assert response_cost("claude-haiku-4-5", searches) == pytest.approx(0.03)
    long = {"input_tokens": 150_000, "output_tokens": 0}
    assert response_cost("claude-haiku-5-5", long) == pytest.approx(150_000 * 0.5 / 1e6)
    assert response_cost("claude-unknown-9", usage) is None


def test_unknown_model_costs_null_not_zero(tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    folder = projects / "-Users-me-other"
    folder.mkdir(parents=True)
    src = CORPUS / "projects" / "-Users-me-other" / "1c99f271-c426-49f7-9ae1-2b8728ab22c4.jsonl"
    lines = src.read_bytes().split(b"\n")
    first = next(i for i, line in enumerate(lines) if b'"type":"assistant"' in line)
    lines[first] = lines[first].replace(b'"model":"claude-opus-5-5"', b'"model":"claude-unknown-9"')
    (folder / src.name).write_bytes(b"\n".join(lines))
    listed = run_cli("list", "--json", "--projects-dir", str(projects))
    assert listed.returncode == 0, listed.stderr
    [session] = json.loads(listed.stdout)
    assert session["usage"] == {
        "inputTokens": 200,
        "outputTokens": 40,
        "cacheCreationTokens": 0,
        "cacheReadTokens": 0,
        "costUSD": None,
    }
    report = run_cli("usage", "--json", "--by", "model", "--projects-dir", str(projects))
    body = json.loads(report.stdout)
    by_model = {g["key"]: g for g in body["groups"]}
    assert by_model["claude-unknown-9"]["costUSD"] is None
    assert by_model["claude-opus-5-5"]["costUSD"] == pytest.approx(0.0008)
    assert body["total"]["costUSD"] is None and body["total"]["pricedCostUSD"] == pytest.approx(0.0008)
    assert body["total"]["unpricedModels"] == ["claude-unknown-9"]


def test_list_json_carries_usage_per_session() -> None:
    listed = run_cli("list", "--json", "--projects-dir", str(CORPUS / "projects"))
    assert listed.returncode == 0, listed.stderr
    by_id = {s["sessionId"]: s["usage"] for s in json.loads(listed.stdout)}
    assert by_id["22222222-2222-4222-8222-222222222222"] == {
        "inputTokens": 700,
        "outputTokens": 140,
        "cacheCreationTokens": 0,
        "cacheReadTokens": 0,
        "costUSD": 0.0056,
    }
    # A --fork-session copy holds its source's responses: its own transcript has 8 of them.
    assert by_id["d864acd2-d28b-43ce-b430-2208a10860fe"]["inputTokens"] == 800


def test_usage_report_counts_fork_copies_once() -> None:
    report = run_cli("usage", "--json", "--projects-dir", str(CORPUS / "projects"))
    assert report.returncode == 0, report.stderr
    body = json.loads(report.stdout)
    groups = {g["key"]: g for g in body["groups"]}
    # 5 responses of 11111111 were copied into d864acd2 by --fork-session: billed once, to 11111111.
    assert groups["11111111-1111-4111-8111-111111111111"]["responses"] == 6
    assert groups["d864acd2-d28b-43ce-b430-2208a10860fe"]["responses"] == 3
    assert body["total"]["responses"] == 18 == sum(g["responses"] for g in body["groups"])
    assert body["total"]["inputTokens"] == 1800 and body["total"]["costUSD"] == pytest.approx(0.0144)
    for by in ("project", "model", "day"):
        other = json.loads(run_cli("usage", "--json", "--by", by, "--projects-dir", str(CORPUS / "projects")).stdout)
        assert other["total"] == body["total"], by
        assert sum(g["inputTokens"] for g in other["groups"]) == 1800
        if by == "project":  # subagent files count for their session's project folder
            assert {g["key"] for g in other["groups"]} == {"-Users-me-other", "-Users-me-shop"}


def test_usage_text_and_bad_input(tmp_path: Path) -> None:
    text = run_cli("usage", "--by", "model", "--projects-dir", str(CORPUS / "projects"))
    assert text.returncode == 0
    assert "claude-opus-5-5" in text.stdout and "$0.0144" in text.stdout and "TOTAL" in text.stdout
    shop = json.loads(
        run_cli("usage", "--json", "--cwd", "/Users/me/shop", "--projects-dir", str(CORPUS / "projects")).stdout
    )
    assert {g["key"] for g in shop["groups"]} == {
        "11111111-1111-4111-8111-111111111111",
        "22222222-2222-4222-8222-222222222222",
        "d864acd2-d28b-43ce-b430-2208a10860fe",
    }
    assert shop["total"]["inputTokens"] == 1600
    missing = run_cli("usage", "--projects-dir", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    bad = run_cli("usage", "--by", "week", "--projects-dir", str(CORPUS / "projects"))
    assert bad.returncode == 2


def test_damaged_and_torn_lines_lose_nothing_else(tmp_path: Path) -> None:
    folder = tmp_path / "projects" / "-Users-me-shop"
    folder.mkdir(parents=True)
    data = PAR.read_bytes()
    lines = data.split(b"\n")
    lines.insert(3, b'{"type":"assistant", garbage')
    (folder / PAR.name).write_bytes(b"\n".join(lines) + b'{"parentUuid":"x","type":"assistant","mess')
    before = (folder / PAR.name).read_bytes()
    u = total(folder_responses(tmp_path / "projects"))
    assert (u.input_tokens, u.responses) == (600, 6)
    assert (folder / PAR.name).read_bytes() == before


def test_grouping_by_day_uses_utc_dates() -> None:
    days = grouped(folder_responses(GENERATED.parent / "projects"), "day")
    assert list(days) == ["2026-11-29"]


def test_legacy_flat_agent_file_counts_for_its_session(tmp_path: Path) -> None:
    """Older CLIs wrote subagents as `agent-<id>.jsonl` beside the sessions; each row names its session."""
    dest = tmp_path / "projects"
    shutil.copytree(CORPUS / "projects", dest)
    agent_rows = (WITH_AGENT.with_suffix("") / "subagents" / "agent-a88b3ce23b875db07.jsonl").read_bytes()
    sid = b"1c99f271-c426-49f7-9ae1-2b8728ab22c4"
    legacy = dest / "-Users-me-other" / "agent-legacy1.jsonl"
    legacy.write_bytes(agent_rows.replace(b"22222222-2222-4222-8222-222222222222", sid))
    listed = run_cli("list", "--json", "--projects-dir", str(dest))
    by_id = {s["sessionId"]: s["usage"] for s in json.loads(listed.stdout)}
    assert by_id[sid.decode()]["inputTokens"] == 200 + 200
    groups = {k: u.input_tokens for k, u in grouped(folder_responses(dest), "session").items()}
    # the copied agent rows keep their message ids: still billed once, to the session that made them first
    assert groups[sid.decode()] == 200 and total(folder_responses(dest)).input_tokens == 1800


def test_a_fifo_named_like_a_subagent_file_is_never_opened(tmp_path: Path) -> None:
    dest = tmp_path / "projects"
    shutil.copytree(CORPUS / "projects", dest)
    subagents = dest / "-Users-me-shop" / "22222222-2222-4222-8222-222222222222" / "subagents"
    os.mkfifo(subagents / "agent-fifo0000000000.jsonl")
    listed = run_cli("list", "--json", "--projects-dir", str(dest))  # would block forever on open()
    assert listed.returncode == 0, listed.stderr
    by_id = {s["sessionId"]: s["usage"] for s in json.loads(listed.stdout)}
    assert by_id["22222222-2222-4222-8222-222222222222"]["inputTokens"] == 700
    report = run_cli("usage", "--json", "--projects-dir", str(dest))
    assert json.loads(report.stdout)["total"]["inputTokens"] == 1800
