"""Our token and cost figures against ccusage (pinned, installed by scripts/setup.d/ccusage.sh), run offline
on the same folders: the real CLI corpora, a folder from bench/make_projects.py, and a corpus copy priced
with models ccusage knows. Where the figures differ, the test names the difference and checks its size:

- `--fork-session` copies without `requestId`: ccusage de-duplicates responses on `message.id` plus
  `requestId`. The CLI 2.1.328 run of the shared corpus wrote `requestRef` instead, so ccusage counts the
  responses a fork copy carries over from its source again, in the copy's session. We count them once,
  for the session that made them (the API billed them once).
- Its `daily` report counts every row of a response (one per content block) when the rows carry no
  `requestId` (the bench folder's rows, like the shared corpus's, have only `requestRef`); its `session`
  report does not. We count a response once in every grouping.
- `claude-opus-5-5`: ccusage's offline price table has no price for it (cost 0, `missingPricing`); ours
  has the CLI 2.1.328 catalog's, which reproduces the CLI's own `cost-state` tally (tests/test_usage.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import CORPUS, TESTS

REPO = TESTS.parent
CCUSAGE_VERSION = "20.0.24"
CCUSAGE = REPO / ".cache" / f"ccusage-{CCUSAGE_VERSION}" / "node_modules" / ".bin" / "ccusage"
GENERATED = TESTS / "corpus" / "generated"
EXTRA = TESTS / "corpus" / "extra"
TOKENS = ("inputTokens", "outputTokens", "cacheCreationTokens", "cacheReadTokens")
KNOWN_MODELS = (
    "claude-sonnet-4-5-20250929",
    "claude-opus-4-1-20250805",
    "claude-haiku-4-5-20251001",
    "claude-opus-4-5-20251101",
    "claude-sonnet-4-20250514",
    "claude-3-5-haiku-20241022",
)


@pytest.fixture(scope="module")
def ccusage() -> Path:
    if CCUSAGE.exists() and os.access(CCUSAGE, os.X_OK):
        return CCUSAGE
    reason = f"CCUSAGE NOT AVAILABLE: {CCUSAGE} missing; run scripts/setup.d/ccusage.sh"
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


def run_ccusage(binary: Path, config_dir: Path, report: str = "session") -> dict[str, Any]:
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(config_dir), "NO_COLOR": "1"}
    args = ["claude", report, "--json", "--offline", "--breakdown", "--mode", "calculate", "-z", "UTC"]
    done = subprocess.run([str(binary), *args], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def run_ours(projects: Path, by: str = "session") -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "server.cli", "usage", "--json", "--by", by, "--projects-dir", str(projects)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def tokens(d: dict[str, Any]) -> tuple[int, ...]:
    return tuple(d[k] for k in TOKENS)


def differences(theirs: dict[str, Any], ours: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """Per session: ccusage's tokens minus ours, for the sessions where they differ."""
    mine = {g["key"]: tokens(g) for g in ours["groups"]}
    out = {}
    for s in theirs["sessions"]:
        delta = tuple(a - b for a, b in zip(tokens(s), mine.get(s["sessionId"], (0, 0, 0, 0)), strict=True))
        if any(delta):
            out[s["sessionId"]] = delta
    assert {s["sessionId"] for s in theirs["sessions"]} == set(mine)
    return out


def carried_without_request_id(projects: Path) -> dict[str, tuple[int, ...]]:
    """Worked out from the raw rows: per session, the tokens of responses with no `requestId` that an
    older session (by first timestamp) already holds, i.e. what a `--fork-session` copy carried over."""
    sessions: list[tuple[str, str, dict[str, tuple[int, ...]], set[str]]] = []
    for f in projects.glob("*/*.jsonl"):
        files = [f, *f.with_suffix("").glob("subagents/**/agent-*.jsonl")]
        responses: dict[str, tuple[int, ...]] = {}
        no_request_id: set[str] = set()
        first = "~"
        for path in files:
            for line in path.read_bytes().splitlines():
                row = orjson.loads(line) if line.strip() else {}
                msg = row.get("message") if isinstance(row, dict) else None
                if row.get("type") != "assistant" or not isinstance(msg, dict) or msg.get("model") == "<synthetic>":
                    continue
                u = msg["usage"]
                responses[msg["id"]] = (
                    u["input_tokens"],
                    u["output_tokens"],
                    u.get("cache_creation_input_tokens", 0),
                    u.get("cache_read_input_tokens", 0),
                )
                first = min(first, row["timestamp"])
                if "requestId" not in row:
                    no_request_id.add(msg["id"])
        sessions.append((first, f.stem, responses, no_request_id))
    seen: set[str] = set()
    out: dict[str, tuple[int, ...]] = {}
    for _, sid, responses, no_request_id in sorted(sessions):
        again = [responses[m] for m in responses if m in seen and m in no_request_id]
        if again:
            out[sid] = tuple(sum(col) for col in zip(*again, strict=True))
        seen.update(responses)
    return out


def repeated_rows_by_day(projects: Path) -> dict[str, tuple[int, ...]]:
    """Per UTC day: tokens of the assistant rows without `requestId` that repeat a response already seen
    (the second and later rows of one response)."""
    seen: set[str] = set()
    out: dict[str, list[int]] = {}
    for path in sorted(projects.rglob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            row = orjson.loads(line) if line.strip() else {}
            msg = row.get("message") if isinstance(row, dict) else None
            if row.get("type") != "assistant" or not isinstance(msg, dict) or msg.get("model") == "<synthetic>":
                continue
            if msg["id"] in seen and "requestId" not in row:
                u = msg["usage"]
                figures = (
                    u["input_tokens"],
                    u["output_tokens"],
                    u.get("cache_creation_input_tokens", 0),
                    u.get("cache_read_input_tokens", 0),
                )
                day = out.setdefault(row["timestamp"][:10], [0, 0, 0, 0])
                for i, n in enumerate(figures):
                    day[i] += n
            seen.add(msg["id"])
    return {day: tuple(t) for day, t in out.items()}


def test_shared_corpus_agrees_but_for_fork_copies_without_request_id(ccusage: Path) -> None:
    theirs = run_ccusage(ccusage, CORPUS)
    ours = run_ours(CORPUS / "projects")
    diff = differences(theirs, ours)
    expected = carried_without_request_id(CORPUS / "projects")
    assert expected == {"d864acd2-d28b-43ce-b430-2208a10860fe": (500, 100, 0, 0)}
    assert diff == expected
    total_delta = tuple(a - b for a, b in zip(tokens(theirs["totals"]), tokens(ours["total"]), strict=True))
    assert total_delta == (500, 100, 0, 0)
    daily = run_ccusage(ccusage, CORPUS, "daily")["daily"]
    [ours_day] = run_ours(CORPUS / "projects", "day")["groups"]
    extra = repeated_rows_by_day(CORPUS / "projects")
    assert extra == {"2026-11-29": (900, 180, 0, 0)}  # 27 rows, 18 responses
    assert [(d["date"], *tokens(d)) for d in daily] == [("2026-11-29", 2700, 540, 0, 0)]
    assert tokens(ours_day) == (1800, 360, 0, 0)
    # Cost: ccusage has no price for the corpus's model; ours is the CLI catalog's ($4 in, $20 out).
    assert theirs["totals"]["totalCost"] == 0 and theirs["totals"]["unpricedModels"] == ["claude-opus-5-5"]
    assert ours["total"]["costUSD"] == pytest.approx((1800 * 4 + 360 * 20) / 1e6)


@pytest.mark.parametrize("corpus", [GENERATED, EXTRA], ids=["generated", "extra"])
def test_cli_corpora_agree(ccusage: Path, corpus: Path) -> None:
    """Both corpora carry `requestId`: ccusage and we agree on every session and the totals, the
    generated corpus's fork (d31a4daa, which copies responses of 11111111) included."""
    theirs = run_ccusage(ccusage, corpus)
    ours = run_ours(corpus / "projects")
    assert carried_without_request_id(corpus / "projects") == {}
    assert differences(theirs, ours) == {}
    assert tokens(theirs["totals"]) == tokens(ours["total"])
    assert ours["total"]["inputTokens"] > 20_000


def test_generated_bench_folder_agrees(ccusage: Path, tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO))
    from bench.make_projects import make_projects

    projects = make_projects(tmp_path / "bench", total_mb=4, seed=7)
    theirs = run_ccusage(ccusage, tmp_path / "bench")
    ours = run_ours(projects)
    assert len(theirs["sessions"]) >= 5
    assert differences(theirs, ours) == {}
    assert tokens(theirs["totals"]) == tokens(ours["total"]) and ours["total"]["responses"] > 100
    # By day, ccusage counts every row of a response whose rows carry no requestId (these rows have
    # only requestRef): it agrees with ours plus those extra rows, day by day.
    daily = {d["date"]: tokens(d) for d in run_ccusage(ccusage, tmp_path / "bench", "daily")["daily"]}
    ours_daily = {g["key"]: tokens(g) for g in run_ours(projects, "day")["groups"]}
    extra = repeated_rows_by_day(projects)
    assert len(daily) >= 2 and sum(extra.get(day, (0,))[0] for day in daily) > 0
    assert daily == {
        day: tuple(a + b for a, b in zip(t, extra.get(day, (0, 0, 0, 0)), strict=True)) for day, t in ours_daily.items()
    }


def _price_with_known_models(src: Path, dest: Path) -> None:
    """A copy of `src` whose responses use models ccusage has prices for, with cache reads and
    cache writes of both lifetimes, written as compact JSON like the CLI's."""
    shutil.copytree(src, dest)
    for path in dest.rglob("*.jsonl"):
        out = []
        for line in path.read_bytes().splitlines():
            row = orjson.loads(line)
            msg = row.get("message") if isinstance(row, dict) else None
            if row.get("type") == "assistant" and isinstance(msg, dict) and msg.get("model") != "<synthetic>":
                n = int.from_bytes(msg["id"].encode()[-6:], "big")
                msg["model"] = KNOWN_MODELS[n % len(KNOWN_MODELS)]
                writes = n % 5000
                one_hour = (n // 7) % (writes + 1) if n % 2 else 0
                usage = msg["usage"]
                usage["cache_creation_input_tokens"] = writes
                usage["cache_read_input_tokens"] = (n // 11) % 20000
                usage["cache_creation"] = {
                    "ephemeral_5m_input_tokens": writes - one_hour,
                    "ephemeral_1h_input_tokens": one_hour,
                }
            out.append(orjson.dumps(row))
        path.write_bytes(b"\n".join(out) + b"\n")


def test_costs_agree_for_models_ccusage_knows(ccusage: Path, tmp_path: Path) -> None:
    _price_with_known_models(GENERATED / "projects", tmp_path / "priced" / "projects")
    theirs = run_ccusage(ccusage, tmp_path / "priced")
    ours = run_ours(tmp_path / "priced" / "projects")
    assert differences(theirs, ours) == {}
    mine = {g["key"]: g for g in ours["groups"]}
    for s in theirs["sessions"]:
        assert s["totalCost"] == pytest.approx(mine[s["sessionId"]]["costUSD"], abs=2e-6), s["sessionId"]
    by_model: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0, 0, 0.0])
    for s in theirs["sessions"]:
        for b in s["modelBreakdowns"]:
            for i, key in enumerate((*TOKENS, "cost")):
                by_model[b["modelName"]][i] += b[key]
    ours_by_model = {g["key"]: g for g in run_ours(tmp_path / "priced" / "projects", "model")["groups"]}
    assert set(by_model) == set(ours_by_model) and len(by_model) == len(KNOWN_MODELS)
    for model, figures in by_model.items():
        assert tuple(figures[:4]) == tokens(ours_by_model[model]), model
        assert figures[4] == pytest.approx(ours_by_model[model]["costUSD"], abs=2e-6), model
    assert ours["total"]["cacheCreation1hTokens"] > 0 and ours["total"]["cacheReadTokens"] > 0
    assert ours["total"]["costUSD"] == pytest.approx(theirs["totals"]["totalCost"], abs=1e-5)
