"""One projects folder holding every damaged copy of tests/corpus/mutations (192 files, eight of them over
5 MB): `chain --json`, `check --json`, `list --json`, `search --json` and the server's `workspace/diagnostic`
over stdio read it whole. `chain` gives what the real CLI sent; every line that is not a row is reported at
its own line; every copy the real CLI resumed is listed; search points at lines that hold the words; the
server follows a torn tail being completed."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from conftest import TESTS
from lsprotocol import types as lsp
from oracle import exact_differences
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from test_mutations_oracle import CASES, REQUESTS, case_path, rebuild

from server.cli import main
from storage.jsonline import BOM

GUARD = 120
"""Seconds before a hung command is killed (a hang is the failure; nothing here is timed)."""
LINE_CODES = {"invalid-json", "torn-tail"}
TORN = "e1111111/torn-tail"
PARENTS = {"parent-number": True, "parent-object": True, "parent-array": True, "parent-true": True,
           "parent-empty-array": True, "parent-empty-object": True, "parent-huge-number-lenient": True,
           "parent-empty": False, "parent-false": False, "parent-zero": False}  # fmt: skip
"""Mutations of `parentUuid`, and whether the row then has a parent that is missing (else it is a root)."""


def dangling_lines(path: Path, mutation: str) -> list[int]:
    """The 1-based line of the row whose `parentUuid` the mutation changed, when it is now a missing parent."""
    lines = path.read_bytes().split(b"\n")
    odd = [n + 1 for n, line in enumerate(lines) if line.startswith(b'{"parentUuid":') and
           not isinstance(json.loads(line.decode(errors="replace"))["parentUuid"], str | None)]  # fmt: skip
    if mutation == "parent-empty":
        odd = [n + 1 for n, line in enumerate(lines) if line.startswith(b'{"parentUuid":""')]
    assert len(odd) == 1, path
    return odd if PARENTS[mutation] else []


def build(projects: Path) -> dict[str, Path]:
    return {key: rebuild(case, projects) for key, case in CASES.items()}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    projects = tmp_path_factory.mktemp("mutated") / "projects"
    return projects, build(projects)


def run(*args: str, cache: Path) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "server.cli", *args],
        capture_output=True,
        text=True,
        timeout=GUARD,
        env={**os.environ, "XDG_CACHE_HOME": str(cache)},
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout)


def bad_lines(diags: list[tuple[str, int, str]], path: Path) -> list[int]:
    return sorted(line for p, line, code in diags if p == str(path) and code in LINE_CODES)


def test_check_reports_every_line_that_is_not_a_row(folder: tuple[Path, dict[str, Path]], tmp_path: Path) -> None:
    projects, paths = folder
    status, out = run("check", "--projects-dir", str(projects), "--json", cache=tmp_path)
    assert status == 1  # errors found, none raised
    diags = [(d["path"], d["line"], d["code"]) for d in out]
    for key, case in CASES.items():
        assert bad_lines(diags, paths[key]) == case["badLines"], key
    assert sum(len(case["badLines"]) for case in CASES.values()) == 72
    for key, case in CASES.items():  # a parentUuid that is no string: a missing parent, unless falsy (a root)
        found = [line for p, line, code in diags if p == str(paths[key]) and code == "dangling-parent"]
        if case["mutation"] in PARENTS:
            assert found == dangling_lines(paths[key], case["mutation"]), key


def test_chain_json_is_what_the_cli_sent(
    folder: tuple[Path, dict[str, Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    """`session-lsp chain FILE --json` of each copy: the CLI's request before its new prompt, or the
    one-line error (status 2) where the CLI found no conversation."""
    projects, paths = folder
    for key, case in sorted(CASES.items()):
        args = [
            "chain",
            str(paths[key]),
            "--json",
            "--projects-dir",
            str(projects),
            *(["--bare"] if case["bare"] else []),
        ]
        if case["request"] is None:
            with pytest.raises(SystemExit) as refused:
                main(args)
            err = capsys.readouterr().err
            assert (refused.value.code, err.count("\n"), "no conversation" in err) == (2, 1, True), key
            continue
        status = main(args)
        out, err = capsys.readouterr()
        assert status == 0, (key, err)
        assert exact_differences(json.loads(out)["messages"], REQUESTS[case["request"]]) == [], key


def test_chain_json_through_the_index_database_is_what_the_cli_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same, with every copy settled and a cache folder: the first `chain` reads each copy and stores its
    rows, the second restores them (`server.index.onefile`); both give what the CLI sent."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("SESSION_LSP_NO_CACHE", raising=False)
    projects = tmp_path / "projects"
    paths = build(projects)
    settled = 1_000_000_000
    for path in projects.rglob("*"):
        os.utime(path, (settled, settled))
    sent = {key: case for key, case in sorted(CASES.items()) if case["request"] is not None}
    for _ in ("read and stored", "restored"):
        for key, case in sent.items():
            args = ["chain", str(paths[key]), "--json", "--projects-dir", str(projects)]
            assert main([*args, *(["--bare"] if case["bare"] else [])]) == 0, key
            got = json.loads(capsys.readouterr().out)["messages"]
            assert exact_differences(got, REQUESTS[case["request"]]) == [], key
    with sqlite3.connect(next((tmp_path / "cache" / "session-lsp").glob("index*.sqlite3"))) as db:
        (stored,) = db.execute("SELECT count(*) FROM rowsets").fetchone()
    assert stored == len({paths[key] for key in sent})


def test_list_lists_every_copy_the_cli_resumed(folder: tuple[Path, dict[str, Path]], tmp_path: Path) -> None:
    projects, _ = folder
    status, out = run("list", "--projects-dir", str(projects), "--json", cache=tmp_path)
    assert status == 0
    resumed = {case["sessionId"] for case in CASES.values() if case["request"] is not None}
    assert {s["sessionId"] for s in out} == resumed
    refused = sorted(key for key, case in CASES.items() if case["request"] is None)
    assert refused == [f"{source}/metadata-only" for source in ("10000001", "55555555", "e1111111", "e4444444")]
    assert all(s["messageCount"] > 0 for s in out)


def test_search_hits_are_lines_that_hold_the_word(folder: tuple[Path, dict[str, Path]], tmp_path: Path) -> None:
    projects, paths = folder
    status, hits = run("search", "echo", "--projects-dir", str(projects), "--json", "--limit", "5000", cache=tmp_path)
    assert status == 0
    by_id = {case["sessionId"]: paths[key] for key, case in CASES.items()}
    for hit in hits:
        data = by_id[hit["sessionId"]].read_bytes().removeprefix(BOM)
        assert b"echo" in data.split(b"\n")[hit["line"]], hit  # 0-based, as `search --json` gives it
    found = {hit["sessionId"] for hit in hits}
    untouched = ("crlf", "bom", "empty-lines", "huge-row", "huge-garbage", "not-objects")
    assert {c["sessionId"] for c in CASES.values() if c["mutation"] in untouched} <= found


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    dest = tmp_path / "projects"
    build(dest)
    return dest


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "server.cli", "serve", "--stdio"]))
async def client(lsp_client: LanguageClient, projects: Path):  # type: ignore[no-untyped-def]
    await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            initialization_options={"projectsDir": str(projects), "watch": True},
        )
    )
    yield
    await lsp_client.shutdown_session()


async def pulled(client: LanguageClient) -> dict[str, list[tuple[int, str]]]:
    """Per file, the 1-based lines of its unreadable lines and missing parents."""
    report = await client.workspace_diagnostic_async(lsp.WorkspaceDiagnosticParams(previous_result_ids=[]))
    codes = {*LINE_CODES, "dangling-parent"}
    return {
        item.uri: sorted((d.range.start.line + 1, str(d.code)) for d in item.items if str(d.code) in codes)
        for item in report.items
    }


async def until(cond, guard: float = 60) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(guard / 0.2)):
        if await cond():
            return
        await asyncio.sleep(0.2)
    raise AssertionError("the server never got there")


async def test_server_reports_every_bad_line_and_follows_a_torn_tail(client: LanguageClient, projects: Path) -> None:
    paths = {key: case_path(case, projects) for key, case in CASES.items()}
    expected = {paths[key].as_uri(): [(n, "") for n in case["badLines"]] for key, case in CASES.items()}
    for key, case in CASES.items():
        if case["mutation"] in PARENTS:
            expected[paths[key].as_uri()] += [
                (n, "dangling-parent") for n in dangling_lines(paths[key], case["mutation"])
            ]

    def seen(uri: str, got: list[tuple[int, str]]) -> list[tuple[int, str]]:
        parents = uri in {paths[k].as_uri() for k, c in CASES.items() if c["mutation"] in PARENTS}
        return sorted((n, code if code == "dangling-parent" else "") for n, code in got
                      if code in LINE_CODES or parents)  # fmt: skip

    async def indexed() -> bool:
        got = await pulled(client)
        return all(seen(uri, got.get(uri, [])) == sorted(want) for uri, want in expected.items())

    await until(indexed)
    listed = await client.protocol.send_request_async("sessions/list", {})
    assert len(listed.sessions) == sum(case["request"] is not None for case in CASES.values())
    torn = paths[TORN]
    rest = _untorn_rest(torn)
    with open(torn, "ab") as fh:  # the write that was in progress completes
        fh.write(rest)

    async def completed() -> bool:
        return [code for _, code in (await pulled(client)).get(torn.as_uri(), []) if code in LINE_CODES] == []

    await until(completed)


def _untorn_rest(torn: Path) -> bytes:
    """What the torn copy lacks: the rest of its last line (from the untouched source) and its newline."""
    case = CASES[TORN]
    source = (TESTS / "corpus" / case["source"]).read_bytes()
    data = torn.read_bytes()
    sid = Path(case["source"]).stem.encode()
    whole = source.replace(sid, case["sessionId"].encode())
    assert whole.startswith(data)
    return whole[len(data) :]
