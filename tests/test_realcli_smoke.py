"""Smoke test: the real Claude Code CLI completes a READ turn against the scripted test model."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from realcli import run_claude
from scripted_api import ScriptedModelServer

pytestmark = [pytest.mark.realcli, pytest.mark.slow]


def test_read_turn_writes_linked_transcript(claude: Path, tmp_path: Path) -> None:
    shop = tmp_path / "shop"
    (shop / "src").mkdir(parents=True)
    target = shop / "src" / "login.ts"
    target.write_text("export const ok = true;\n")
    config = tmp_path / "config"
    sid = str(uuid.uuid4())
    with ScriptedModelServer() as model:
        done = run_claude(
            [f"READ {target}", "--session-id", sid],
            cwd=shop,
            config_dir=config,
            base_url=model.base_url,
            timeout=90,
            claude=claude,
        )
        assert done.returncode == 0, done.stderr
        assert "I read it (1 tool results)." in done.stdout
        assert {r["sessionId"] for r in model.requests} == {sid}

    files = list((config / "projects").glob(f"*/{sid}.jsonl"))
    assert len(files) == 1, list((config / "projects").rglob("*"))
    rows = [json.loads(line) for line in files[0].read_text(encoding="utf-8").splitlines() if line]
    by_uuid = {r["uuid"]: r for r in rows if "uuid" in r}
    uses = [
        r
        for r in rows
        if r.get("type") == "assistant" and any(b.get("type") == "tool_use" for b in r["message"]["content"])
    ]
    results = [
        r
        for r in rows
        if r.get("type") == "user"
        and isinstance(r["message"]["content"], list)
        and any(b.get("type") == "tool_result" for b in r["message"]["content"])
    ]
    assert len(uses) == 1 and len(results) == 1
    (use,), (result,) = uses, results
    assert result["sourceToolAssistantUUID"] == use["uuid"]
    assert result["parentUuid"] == use["uuid"]
    assert result["message"]["content"][0]["tool_use_id"] == use["message"]["content"][0]["id"]
    assert by_uuid[use["uuid"]]["sessionId"] == sid
    assert rows[-1] is not None and files[0].read_bytes().endswith(b"\n")
