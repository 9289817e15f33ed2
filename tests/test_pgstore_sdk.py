"""The real Claude Agent SDK with our PostgreSQL store as its `session_store`: it runs the real
Claude Code CLI offline against the scripted test model, mirrors the session into the store, and
resumes it from the store on an empty config folder. Our reading of the store must agree with
the SDK's, and with what the CLI sends when it resumes."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from claude_agent_sdk import (
    ClaudeAgentOptions,
    fold_session_summary,
    get_session_messages_from_store,
    list_sessions_from_store,
    project_key_for_directory,
    query,
)
from realcli import claude_env
from scripted_api import ScriptedModelServer
from test_interop_write import assert_cli_sees

from storage.paths import project_folder_name, resolve_cwd
from storage.pgstore import PostgresSessionStore

NOT_MIRRORED = ("api-request",)
"""Row types the CLI writes to its local file but does not mirror (its request log)."""


def rows_of(path: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if not str(r.get("type", "")).startswith(NOT_MIRRORED)]


def visible(entry: dict[str, Any]) -> bool:
    """What the SDK returns as a session message: user and assistant rows that are not meta,
    sidechain or team rows (attachments and meta rows go to the model but are not 'messages')."""
    return (
        entry.get("type") in ("user", "assistant")
        and not entry.get("isMeta")
        and not entry.get("isSidechain")
        and not entry.get("teamName")
    )


async def run_turn(options: ClaudeAgentOptions, prompt: str) -> str:
    sid = None
    async for message in query(prompt=prompt, options=options):
        sid = getattr(message, "session_id", None) or sid
    assert sid, "the SDK reported no session"
    return sid


def chain_from_store(url: str, schema: str, sid: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "server.cli", "chain", sid, "--store", url, "--store-schema", schema, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_sdk_mirrors_into_the_store_and_resumes_from_it(pg_server, pg_schema, claude, tmp_path: Path) -> None:
    shop = tmp_path / "shop"
    shop.mkdir()
    (shop / "a.txt").write_text("contents of a\n")
    home = tmp_path / "home"
    url = pg_server.url()

    with ScriptedModelServer() as model:

        def options(config: Path, **extra: Any) -> ClaudeAgentOptions:
            env = claude_env(config_dir=config, base_url=model.base_url, home=home)
            return ClaudeAgentOptions(
                cwd=str(shop),
                cli_path=str(claude),
                env=env,
                session_store=PostgresSessionStore(url, schema=pg_schema),
                allowed_tools=["Read", "Agent"],
                system_prompt="You are driven by a scripted test model.",
                **extra,
            )

        # turn 1: a subagent that reads a file, mirrored into the store
        config1 = tmp_path / "config1"
        first = options(config1)
        sid = asyncio.run(run_turn(first, f"AGENT READ {shop / 'a.txt'}"))
        store = PostgresSessionStore(url, schema=pg_schema, read_only=True)
        key = project_key_for_directory(str(shop))
        assert key == project_folder_name(resolve_cwd(str(shop)))

        async def read_store() -> dict[str, Any]:
            try:
                subkeys = await store.list_subkeys({"project_key": key, "session_id": sid})
                return {
                    "listed": await store.list_sessions(key),
                    "main": await store.load({"project_key": key, "session_id": sid}),
                    "subs": {
                        s: await store.load({"project_key": key, "session_id": sid, "subpath": s}) for s in subkeys
                    },
                    "summaries": await store.list_session_summaries(key),
                    "sdk_list": await list_sessions_from_store(store, directory=str(shop)),
                    "sdk_messages": await get_session_messages_from_store(store, sid, directory=str(shop)),
                }
            finally:
                await store.close()

        got = asyncio.run(read_store())
        local = config1 / "projects" / key / f"{sid}.jsonl"
        assert [s["session_id"] for s in got["listed"]] == [sid]
        assert got["main"] == rows_of(local)  # every mirrored row, once, in the file's order
        (subpath,) = got["subs"]
        sub_file = local.parent / sid / f"{subpath}.jsonl"
        sub_entries = got["subs"][subpath]
        assert [e for e in sub_entries if e.get("type") != "agent_metadata"] == rows_of(sub_file)
        meta = [e for e in sub_entries if e.get("type") == "agent_metadata"][-1]
        assert {k: v for k, v in meta.items() if k != "type"} == json.loads(
            sub_file.with_name(sub_file.stem + ".meta.json").read_text()
        )
        (summary,) = got["summaries"]
        assert (
            summary["data"] == fold_session_summary(None, {"project_key": key, "session_id": sid}, got["main"])["data"]
        )
        assert [i.session_id for i in got["sdk_list"]] == [sid]
        assert got["sdk_list"][0].first_prompt == f"AGENT READ {shop / 'a.txt'}"

        # our reading of the store (chain --store) against the SDK's get_session_messages_from_store
        ours = chain_from_store(url, pg_schema, sid)
        by_uuid = {e["uuid"]: e for e in got["main"] if "uuid" in e}
        sdk_messages = got["sdk_messages"]
        assert len(sdk_messages) >= 4
        assert [m.uuid for m in sdk_messages] == [u for u in ours["uuids"] if visible(by_uuid[u])]
        assert [m.message for m in sdk_messages] == [by_uuid[m.uuid]["message"] for m in sdk_messages]

        # turn 2: resume from the store on an empty config folder; the CLI sends our API form
        sent_before = len(model.requests)
        second = options(tmp_path / "config2", resume=sid)
        assert asyncio.run(run_turn(second, "NEXT please")) == sid
        requests = [r for r in model.requests[sent_before:] if r.get("sessionId") == sid]
        assert requests, "the resumed CLI sent nothing"
        assert_cli_sees(ours["messages"], requests[0], "NEXT please")

        async def load_again() -> list[Any]:
            async with PostgresSessionStore(url, schema=pg_schema, read_only=True) as again:
                return await again.load({"project_key": key, "session_id": sid})

        after = asyncio.run(load_again())
        assert after[: len(got["main"])] == got["main"]
        uuids = [e["uuid"] for e in after if "uuid" in e]
        assert len(uuids) == len(set(uuids))
        assert len(after) > len(got["main"])
        assert "NEXT please" in json.dumps(after[len(got["main"]) :])
        for opts in (first, second):
            asyncio.run(opts.session_store.close())  # their loops are gone: dropped, not closed
