"""Attacks on where we read and write: every target is decided by `storage.access.resolve_target`.

Each test names a target outside the projects folder, behind a symlink, or not a transcript, through
the real server over stdio and through the real command line, and checks that the request is
refused (InvalidParams with a `data.reason`, or exit status 2 with one line) and nothing is written.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_lsp
from conftest import CORPUS
from lsprotocol import types as lsp
from lspserver import SERVER, open_session
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient
from treedigest import digest_tree

from server.index import ProjectIndex
from server.lsp.server import to_plain
from storage.paths import project_folder_name

SHOP = "-Users-me-shop"
S1 = "11111111-1111-4111-8111-111111111111"
OUT = "44444444-4444-4444-8444-444444444444"
LINKED = "55555555-5555-4555-8555-555555555555"


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    """A projects folder with a real session, and outside it a real transcript, a secret project
    folder reached through a symlinked project folder, a session file reached through a symlink,
    and a JSON log that is not a transcript."""
    projects = tmp_path / "config" / "projects"
    shutil.copytree(CORPUS / "projects", projects)
    outside = tmp_path / "outside"
    outside.mkdir()
    real_session = (projects / SHOP / f"{S1}.jsonl").read_bytes()
    (outside / f"{OUT}.jsonl").write_bytes(real_session.replace(S1.encode(), OUT.encode()))
    victim = outside / "victim-project"
    victim.mkdir()
    (victim / f"{LINKED}.jsonl").write_bytes(real_session.replace(S1.encode(), LINKED.encode()))
    (projects / "-linked-project").symlink_to(victim, target_is_directory=True)
    (projects / SHOP / f"{OUT}.jsonl").symlink_to(outside / f"{OUT}.jsonl")
    (projects / SHOP / "66666666-6666-4666-8666-666666666666.jsonl").write_text('{"a":1}\n{"a":2}\n')
    log = outside / "app.jsonl"
    log.write_text('{"level":"info","msg":"started"}\n{"level":"info","msg":"ok"}\n')
    return {"projects": projects, "outside": outside, "log": log, "tmp": tmp_path}


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


# -- the command line -----------------------------------------------------------------------------


@pytest.mark.parametrize("ref", [LINKED, OUT])
def test_cli_never_follows_a_symlink_out_of_the_projects_folder(world: dict[str, Path], ref: str) -> None:
    projects, outside = world["projects"], world["outside"]
    before = digest_tree(outside)
    for args in (
        ["chain", ref],
        ["fork", ref],
        ["tag", ref, "pwned"],
        ["rename", ref, "pwned"],
        ["turn", "--resume", ref, "--provider", "anthropic", "--cwd", str(world["tmp"]), "hello"],
    ):
        out = cli(*args, "--projects-dir", str(projects))
        assert out.returncode == 2, (args, out.stdout, out.stderr)
        assert out.stderr.count("\n") == 1 and "outside the projects folder" in out.stderr, (args, out.stderr)
        assert out.stdout == ""
    assert digest_tree(outside) == before
    assert sorted(p.name for p in outside.rglob("*")) == sorted(
        ["app.jsonl", f"{OUT}.jsonl", "victim-project", f"{LINKED}.jsonl"]
    )


def test_cli_refuses_paths_outside_and_files_that_are_not_transcripts(world: dict[str, Path]) -> None:
    projects, log = world["projects"], world["log"]
    before = log.read_bytes()
    for args in (["rename", str(log), "sealed"], ["tag", str(log), "x"], ["chain", str(log)], ["fork", str(log)]):
        out = cli(*args, "--projects-dir", str(projects))
        assert out.returncode == 2 and "outside the projects folder" in out.stderr, (args, out.stderr)
    inside = projects / SHOP / "app.jsonl"
    shutil.copy(log, inside)
    not_session = projects / SHOP / "66666666-6666-4666-8666-666666666666.jsonl"
    for target in (inside, not_session):
        snapshot = target.read_bytes()
        for args in (["rename", str(target), "sealed"], ["tag", str(target), "x"]):
            out = cli(*args, "--projects-dir", str(projects))
            assert out.returncode == 2 and out.stderr.count("\n") == 1, (args, out.stderr)
            assert "not a" in out.stderr, out.stderr
        assert target.read_bytes() == snapshot
    assert log.read_bytes() == before


def test_cli_refuses_a_fifo_named_like_a_session_without_hanging(world: dict[str, Path]) -> None:
    fifo = world["projects"] / SHOP / "77777777-7777-4777-8777-777777777777.jsonl"
    os.mkfifo(fifo)
    for args in (["chain", fifo.stem], ["tag", fifo.stem, "x"], ["fork", fifo.stem]):
        out = cli(*args, "--projects-dir", str(world["projects"]))
        assert out.returncode == 2 and "not a regular file" in out.stderr, (args, out.stderr)


def test_log_file_is_private_even_under_umask_zero(world: dict[str, Path]) -> None:
    log = world["tmp"] / "server.log"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, sys; os.umask(0); from server.cli import main; sys.exit(main())",
            "serve",
            "--log-file",
            str(log),
            "--projects-dir",
            str(world["projects"]),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.communicate(b"", timeout=60)
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


# -- the language server --------------------------------------------------------------------------


@pytest.fixture
def projects(world: dict[str, Path]) -> Path:
    return world["projects"]


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, projects: Path):  # type: ignore[no-untyped-def]
    await open_session(lsp_client, projects)
    yield
    await lsp_client.shutdown_session()


async def refused(client: LanguageClient, method: str, params: dict[str, object]) -> dict[str, object]:
    with pytest.raises(JsonRpcException) as info:
        await client.protocol.send_request_async(method, params)
    assert info.value.code == -32602, (method, params, info.value)
    data = to_plain(info.value.data)
    assert isinstance(data, dict) and data.get("reason"), (method, params, data)
    return data


async def test_server_refuses_every_way_out(client: LanguageClient, world: dict[str, Path]) -> None:
    projects, outside, log, tmp = world["projects"], world["outside"], world["log"], world["tmp"]
    before_out, before_in = digest_tree(outside), digest_tree(projects)
    turn = {"prompt": "hello", "provider": "anthropic", "cwd": str(tmp)}
    cases: list[tuple[str, dict[str, object], str]] = [
        ("sessions/runTurn", {**turn, "path": str(outside / f"{OUT}.jsonl")}, "outside-projects"),
        ("sessions/runTurn", {**turn, "path": str(log)}, "outside-projects"),
        ("sessions/runTurn", {**turn, "sessionId": LINKED}, "outside-projects"),
        ("sessions/runTurn", {**turn, "sessionId": OUT}, "outside-projects"),
        ("sessions/runTurn", {**turn, "sessionId": "66666666-6666-4666-8666-666666666666"}, "not-a-transcript"),
        ("sessions/runTurn", {**turn, "projectsDir": str(tmp / "elsewhere")}, "outside-projects"),
        ("sessions/runTurn", {**turn, "path": str(projects / SHOP / "new.jsonl")}, "not-found"),
        ("sessions/list", {"projectsDir": str(outside)}, "outside-projects"),
        ("sessions/chain", {"sessionId": LINKED}, "outside-projects"),
        ("sessions/chain", {"path": str(outside / f"{OUT}.jsonl")}, "outside-projects"),
        ("sessions/tree", {"sessionId": OUT}, "outside-projects"),
        ("sessions/fork", {"sessionId": LINKED}, "outside-projects"),
        ("sessions/fork", {"path": str(log)}, "outside-projects"),
        (
            "sessions/resume",
            {"path": str(projects / SHOP / "66666666-6666-4666-8666-666666666666.jsonl")},
            "not-a-transcript",
        ),
    ]
    for method, params, reason in cases:
        data = await refused(client, method, params)
        assert data["reason"] == reason, (method, params, data)
    assert digest_tree(outside) == before_out
    assert digest_tree(projects) == before_in
    assert not (tmp / "elsewhere").exists()


async def test_server_refuses_an_implied_sandbox_of_the_root_folder(client: LanguageClient, projects: Path) -> None:
    """A transcript whose recorded cwd is `/`: a turn without an explicit cwd would let the tools
    reach the whole disk. Refused, and nothing is written; with cwd given explicitly it runs."""
    src = projects / SHOP / f"{S1}.jsonl"
    rooted = projects / "-" / "88888888-8888-4888-8888-888888888888.jsonl"
    rooted.parent.mkdir()
    text = src.read_text().replace(S1, rooted.stem).replace('"cwd":"/Users/me/shop"', '"cwd":"/"')
    rooted.write_text(text)
    data = await refused(
        client, "sessions/runTurn", {"prompt": "LS", "provider": "anthropic", "sessionId": rooted.stem}
    )
    assert data["reason"] == "unsafe"
    assert rooted.read_text() == text
    out = to_plain(
        await client.protocol.send_request_async(
            "sessions/runTurn", {"prompt": "hello", "provider": "anthropic", "sessionId": rooted.stem, "cwd": "/"}
        )
    )
    assert out["path"] == str(rooted) and len(rooted.read_text()) > len(text)


async def test_server_creates_new_sessions_only_where_the_cwd_maps(
    client: LanguageClient, world: dict[str, Path]
) -> None:
    projects, tmp = world["projects"], world["tmp"]
    work = tmp / "work dir"
    work.mkdir()
    out = to_plain(
        await client.protocol.send_request_async(
            "sessions/runTurn", {"prompt": "hello", "provider": "anthropic", "cwd": str(work), "mode": "new"}
        )
    )
    made = Path(out["path"])
    assert made.parent == projects / project_folder_name(str(work))
    assert made.parent.parent == projects and made.is_file()
    # a project folder planted as a symlink to elsewhere is not a way out for a new session either
    elsewhere = tmp / "elsewhere-project"
    elsewhere.mkdir()
    other = tmp / "other"
    other.mkdir()
    (projects / project_folder_name(str(other))).symlink_to(elsewhere, target_is_directory=True)
    data = await refused(
        client, "sessions/runTurn", {"prompt": "hello", "provider": "anthropic", "cwd": str(other), "mode": "new"}
    )
    assert data["reason"] == "outside-projects"
    assert list(elsewhere.iterdir()) == []


# -- discovery: listing, checking, searching and indexing never follow a symlink out ----------------

SECRET = "zanzibar-outside-only"


def plant_secrets(world: dict[str, Path]) -> None:
    """The outside transcripts say a word no inside file says; a subagent file linked out says it too."""
    for path in (world["outside"] / f"{OUT}.jsonl", world["outside"] / "victim-project" / f"{LINKED}.jsonl"):
        path.write_text(path.read_text().replace("echo", f"echo {SECRET}"))
    agent = world["outside"] / "agent-a0123456789abcdef.jsonl"
    agent.write_text((world["outside"] / f"{OUT}.jsonl").read_text())
    subagents = world["projects"] / SHOP / S1 / "subagents"
    subagents.mkdir(parents=True)
    (subagents / "agent-a0123456789abcdef.jsonl").symlink_to(agent)
    # a session's folder linked out: its subagents are reached through a folder link, not a file link
    linked_folder = world["outside"] / "linked-session"
    (linked_folder / "subagents").mkdir(parents=True)
    # with a damaged line: were it indexed, workspace/diagnostic would name it
    (linked_folder / "subagents" / "agent-b0123456789abcdef.jsonl").write_text(agent.read_text() + "{garbage\n")
    (world["projects"] / SHOP / "d864acd2-d28b-43ce-b430-2208a10860fe").symlink_to(linked_folder)


def test_cli_discovery_never_reads_through_a_symlink_out(world: dict[str, Path]) -> None:
    plant_secrets(world)
    projects = str(world["projects"])
    listed = cli("list", "--json", "--projects-dir", projects)
    assert listed.returncode == 0, listed.stderr
    ids = {s["sessionId"] for s in json.loads(listed.stdout)}
    assert S1 in ids and not ids & {OUT, LINKED}, ids
    assert "a0123456789abcdef" not in listed.stdout and "b0123456789abcdef" not in listed.stdout
    for args in (("check", "--json"), ("search", SECRET, "--json"), ("usage", "--json")):
        out = cli(*args, "--projects-dir", projects)
        assert out.returncode in (0, 1), (args, out.stderr)
        assert OUT not in out.stdout and LINKED not in out.stdout and SECRET not in out.stdout, (args, out.stdout)
        assert "a0123456789abcdef" not in out.stdout and "b0123456789abcdef" not in out.stdout, (args, out.stdout)


@pytest_lsp.fixture(config=SERVER)
async def planted_client(lsp_client: LanguageClient, world: dict[str, Path]):  # type: ignore[no-untyped-def]
    plant_secrets(world)
    await open_session(lsp_client, world["projects"])
    yield
    await lsp_client.shutdown_session()


def test_the_index_never_discovers_through_a_symlink_out(world: dict[str, Path]) -> None:
    plant_secrets(world)
    index = ProjectIndex(world["projects"], persist=False)
    found = [str(p) for p in index.discover()]
    assert any(S1 in p for p in found), found
    for name in (OUT, LINKED, "a0123456789abcdef", "b0123456789abcdef"):
        assert not any(name in p for p in found), (name, found)
    assert any("leading out" in why for why in index.skipped.values()), index.skipped


async def test_server_discovery_never_reads_through_a_symlink_out(planted_client: LanguageClient) -> None:
    listed = to_plain(await planted_client.protocol.send_request_async("sessions/list", {}))
    ids = {s["sessionId"] for s in listed["sessions"]}
    assert S1 in ids and not ids & {OUT, LINKED}, ids
    assert "a0123456789abcdef" not in json.dumps(listed) and "b0123456789abcdef" not in json.dumps(listed)
    symbols = await planted_client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query=SECRET))
    assert not symbols, symbols
    report = await planted_client.workspace_diagnostic_async(lsp.WorkspaceDiagnosticParams(previous_result_ids=[]))
    uris = " ".join(item.uri for item in report.items)
    assert OUT not in uris and LINKED not in uris and "a0123456789abcdef" not in uris, uris
    assert "b0123456789abcdef" not in uris, uris
