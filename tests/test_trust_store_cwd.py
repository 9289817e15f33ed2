"""A store session's recorded `cwd` never roots a turn's sandbox on its own.

Anyone who can insert into the team's session store writes a session's rows, `cwd` included. A turn on
that session (`sessions/runTurn {store}`) used that cwd as the root of its tools when the client gave
none: a row recording `~/.ssh` let the always-on Read tool read the private key there, and the turn's
rows (the key among them) were appended to the shared store for whoever planted it. Now a turn in a store
needs the person's own `cwd` (InvalidParams naming `cwd`), nothing is read or written without it, and a
turn given a folder of the person's runs there, where the planted folder is out of reach.

Real parts: a real PostgreSQL store, the real server over stdio, the scripted model asking to `Read`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient
from test_lsp_store import (
    S1,
    SHOP,
    apart,
    client,  # noqa: F401 - the real server over stdio with the store below
    corpus_keys,
    entries_of,
    fill,
    request,
    store_items,
)
from test_store_commands import cli

from storage.pgstore import PostgresSessionStore

PLANTED = "44444444-4444-4444-8444-444444444444"
SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- planted-secret-7f3a"


def planted_key_folder() -> Path:
    """`~/.ssh` of the test's own HOME (conftest), holding a private key."""
    ssh = Path(os.environ["HOME"]) / ".ssh"
    ssh.mkdir(mode=0o700, parents=True, exist_ok=True)
    (ssh / "id_ed25519").write_text(SECRET + "\n", encoding="utf-8")
    return ssh


def project_key_of(cwd: Path) -> str:
    return "".join(c if c.isalnum() else "-" for c in str(cwd))


@pytest.fixture
def store(pg_server: Any, pg_schema: str) -> dict[str, Any]:
    """The shared corpus plus a session someone planted: S1's rows, each recording cwd `~/.ssh`."""
    ssh = planted_key_folder()
    keys = corpus_keys()
    rows = [
        {**row, "sessionId": PLANTED, **({"cwd": str(ssh)} if "cwd" in row else {})} for row in keys[(SHOP, S1, "")]
    ]
    assert any("cwd" in row for row in rows)
    planted_project = project_key_of(ssh)
    keys[(planted_project, PLANTED, "")] = rows
    url = pg_server.url()
    apart(fill(url, pg_schema, keys))
    return {"url": url, "schema": pg_schema, "keys": keys, "project": planted_project, "ssh": ssh}


async def stored(store: dict[str, Any]) -> list[Any]:
    async with PostgresSessionStore(store["url"], schema=store["schema"]) as reader:
        return list(await reader.load({"project_key": store["project"], "session_id": PLANTED}))


async def test_a_store_turn_without_cwd_is_refused_not_rooted_at_the_recorded_cwd(
    client: LanguageClient,  # noqa: F811 - the fixture imported above
    projects: Path,
    store: dict[str, Any],
    tmp_path: Path,
) -> None:
    items = await store_items(client)
    assert items[PLANTED]["cwd"] == str(store["ssh"])
    before = await stored(store)
    key = store["ssh"] / "id_ed25519"
    params = {"sessionId": PLANTED, "store": items[PLANTED]["storeId"], "provider": "anthropic"}

    # the attack: the person runs a turn on the store session as listed; the model asks for the key
    with pytest.raises(JsonRpcException) as caught:
        await request(client, "sessions/runTurn", {**params, "prompt": f"READ {key}"})
        leaked = SECRET in json.dumps(await stored(store))
        print(f"the turn ran rooted at {store['ssh']}; the key is in the shared store: {leaked}")
    error = caught.value
    assert error.code == -32602 and "cwd" in error.message, error.message
    data: Any = error.data if isinstance(error.data, dict) else {}
    assert data.get("reason") == "invalid-argument", error
    # nothing read, nothing written: no local copy, the store as it was, the key in no row
    assert await stored(store) == before
    assert list(projects.rglob("*.jsonl")) == []

    # the person's own folder: the turn runs there, and the planted folder is out of its reach
    work = tmp_path / "work"
    work.mkdir()
    out = await request(client, "sessions/runTurn", {**params, "cwd": str(work), "prompt": f"READ {key}"})
    assert out["pushed"] > 0
    after = await stored(store)
    assert SECRET not in json.dumps(after)
    results = [
        b
        for row in after[len(before) :]
        if row.get("type") == "user" and isinstance(row["message"]["content"], list)
        for b in row["message"]["content"]
        if b.get("type") == "tool_result"
    ]
    assert results and results[-1]["is_error"] is True, results
    local = projects / store["project"] / f"{PLANTED}.jsonl"
    assert entries_of(local) == after


async def refused_without_cwd(server: LanguageClient, sid: str, prompt: str) -> None:
    params = {"sessionId": sid, "provider": "anthropic", "prompt": prompt}
    with pytest.raises(JsonRpcException) as caught:
        await request(server, "sessions/runTurn", params)
        print(f"the local copy's turn ran rooted at the store's cwd: {sid}")
    error = caught.value
    assert error.code == -32602 and "cwd" in error.message and "session store" in error.message, error.message
    data: Any = error.data if isinstance(error.data, dict) else {}
    assert data.get("reason") == "unsafe", error


async def test_a_local_copy_of_a_store_session_is_not_rooted_at_its_recorded_cwd(
    client: LanguageClient,  # noqa: F811 - the fixture imported above
    projects: Path,
    store: dict[str, Any],
    tmp_path: Path,
) -> None:
    """The store's cwd also reaches the projects folder: the local copy a store turn leaves, a `pull`, and a fork
    of either record it. A plain turn on one of them (Neovim's :SessionTurn gives no cwd; VS Code none for a local
    session) ran its tools there, and the next `push` sent what they read to the store."""
    items = await store_items(client)
    key = store["ssh"] / "id_ed25519"
    work = tmp_path / "work"
    work.mkdir()
    in_store = {"sessionId": PLANTED, "store": items[PLANTED]["storeId"], "provider": "anthropic", "cwd": str(work)}
    await request(client, "sessions/runTurn", {**in_store, "prompt": "hello"})
    local = projects / store["project"] / f"{PLANTED}.jsonl"
    assert local.is_file()
    copied = local.read_bytes()
    await refused_without_cwd(client, PLANTED, f"READ {key}")
    assert local.read_bytes() == copied

    # a fork of the copy records the same cwd: refused the same way
    fork = await request(client, "sessions/fork", {"sessionId": PLANTED})
    await refused_without_cwd(client, fork["sessionId"], f"READ {key}")

    # `session-lsp pull` of another planted session (the store's rows again, another id)
    other = "55555555-5555-4555-8555-555555555555"
    rows = [{**r, "sessionId": other} for r in store["keys"][(store["project"], PLANTED, "")]]
    await fill(store["url"], store["schema"], {(store["project"], other, ""): rows})
    pulled = cli(
        "pull", other, "--store", store["url"], "--store-schema", store["schema"], "--projects-dir", str(projects)
    )
    assert pulled.returncode == 0, pulled.stderr
    await refused_without_cwd(client, other, f"READ {key}")

    # the same pull through another name of the projects folder (a link to it): its mark still counts for the
    # server's name (it was made below the parent of the name as written, and missed)
    third = "56565656-5656-4656-8656-565656565656"
    rows = [{**r, "sessionId": third} for r in store["keys"][(store["project"], PLANTED, "")]]
    await fill(store["url"], store["schema"], {(store["project"], third, ""): rows})
    alias = tmp_path / "alias" / "projects"
    alias.parent.mkdir()
    alias.symlink_to(projects, target_is_directory=True)
    pulled = cli(
        "pull", third, "--store", store["url"], "--store-schema", store["schema"], "--projects-dir", str(alias)
    )
    assert pulled.returncode == 0, pulled.stderr
    await refused_without_cwd(client, third, f"READ {key}")

    # the person's own folder is still theirs to give
    out = await request(client, "sessions/runTurn", {"sessionId": other, "cwd": str(work), "prompt": f"READ {key}"})
    assert out["sessionId"] == other
    for path in projects.rglob("*.jsonl"):
        assert SECRET not in path.read_text(encoding="utf-8"), path
    assert SECRET not in json.dumps(await stored(store))
