"""Property: after any churn of the projects folder (appends, rewrites in place, truncations,
deletions, renames, folder removal), the diagnostics of the real server over stdio equal those of
`session-lsp check` run on the same files. One server lives through every example; each example
starts from a fresh copy of the real CLI corpus (itself a removal and return of the folder)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
import shutil
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from conftest import CORPUS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from server.cli import main
from server.index.store import tracked_kind

SETTLE = 30.0
"""Seconds the server gets to catch up before the comparison fails (a bound, not a measure)."""
UUID_RE = re.compile(rb'"uuid":"([0-9a-f-]{36})"')


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    dest = tmp_path / "config" / "projects"
    shutil.copytree(CORPUS / "projects", dest)
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


def transcripts(projects: Path) -> list[Path]:
    return sorted(p for p in projects.rglob("*.jsonl") if tracked_kind(p) in ("session", "subagent"))


def _uuids(path: Path) -> list[str]:
    return [m.decode() for m in UUID_RE.findall(path.read_bytes())]


def _row(parent: str | None, session: str) -> bytes:
    entry = {"parentUuid": parent, "type": "user", "uuid": str(uuid.uuid4()), "sessionId": session,
             "message": {"role": "user", "content": "churn"}, "timestamp": "2030-01-01T00:00:00.000Z"}  # fmt: skip
    return json.dumps(entry, separators=(",", ":")).encode()


def _in_place(path: Path, data: bytes) -> None:
    with open(path, "r+b") as fh:
        fh.truncate(0)
        fh.write(data)


def apply(projects: Path, op: tuple[Any, ...]) -> None:
    files = transcripts(projects)
    if not files and op[0] != "rmdir":
        return
    kind = op[0]
    path = files[op[1] % len(files)] if files else projects
    if kind == "append":
        what = op[2]
        own, mates = _uuids(path), [u for p in files if p.parent == path.parent and p != path for u in _uuids(p)]
        parent = {"child": own[-1] if own else None, "cross": mates[0] if mates else None,
                  "dangling": str(uuid.uuid4())}.get(what)  # fmt: skip
        line = {"garbage": b"{garbage", "tag": b'{"type":"tag","tag":"t"}', "torn": _row(None, path.stem)[:40]}.get(
            what, _row(parent, path.stem)
        )
        with open(path, "ab") as fh:
            fh.write(line if what == "torn" else line + b"\n")
    elif kind == "rewrite":
        lines = path.read_bytes().split(b"\n")
        at = op[3] % max(len(lines), 1)
        if op[2] == "insert-garbage":
            lines.insert(at, b"[not an object]")
        elif op[2] == "drop-line" and lines:
            del lines[at]
        elif op[2] == "duplicate-line" and lines:
            lines.insert(at, lines[at])
        elif op[2] == "flip-byte" and lines and lines[at]:
            lines[at] = b"{" + lines[at][1:] if lines[at][:1] != b"{" else b"[" + lines[at][1:]
        _in_place(path, b"\n".join(lines))
    elif kind == "truncate":
        size = path.stat().st_size
        with open(path, "r+b") as fh:
            fh.truncate(int(size * op[2]))
    elif kind == "delete":
        path.unlink()
    elif kind == "rename":
        folder = path.parent if op[2] or path.parent.name == "subagents" else projects / "-Users-me-moved"
        folder.mkdir(exist_ok=True)
        name = f"agent-a{uuid.uuid4().hex[:16]}.jsonl" if path.parent.name == "subagents" else f"{uuid.uuid4()}.jsonl"
        path.rename(folder / name)
    elif kind == "rmdir":
        folders = sorted(p for p in projects.iterdir() if p.is_dir()) if projects.is_dir() else []
        if folders:
            shutil.rmtree(folders[op[1] % len(folders)])


FILE = st.integers(0, 63)
OPS = st.one_of(
    st.tuples(st.just("append"), FILE, st.sampled_from(["child", "cross", "dangling", "garbage", "tag", "torn"])),
    st.tuples(
        st.just("rewrite"), FILE, st.sampled_from(["insert-garbage", "drop-line", "duplicate-line", "flip-byte"]), FILE
    ),
    st.tuples(st.just("truncate"), FILE, st.floats(0.0, 1.0)),
    st.tuples(st.just("delete"), FILE),
    st.tuples(st.just("rename"), FILE, st.booleans()),
    st.tuples(st.just("rmdir"), FILE),
)


def checked(projects: Path) -> list[tuple[str, int, str, str]]:
    """`session-lsp check --json` on the folder (the command itself, run in this process)."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with contextlib.redirect_stdout(out):
        status = main(["check", "--projects-dir", str(projects), "--json", "-j1"])
    assert status in (0, 1)
    out.flush()
    found = json.loads(out.buffer.getvalue())  # type: ignore[attr-defined]
    return sorted((Path(d["path"]).as_uri(), d["line"] - 1, d["code"], d["message"]) for d in found)


async def served(client: LanguageClient) -> list[tuple[str, int, str, str]]:
    report = await client.workspace_diagnostic_async(lsp.WorkspaceDiagnosticParams(previous_result_ids=[]))
    return sorted((i.uri, d.range.start.line, str(d.code), d.message) for i in report.items for d in i.items)


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(OPS, min_size=1, max_size=10))
async def test_server_diagnostics_equal_check_after_churn(
    client: LanguageClient, projects: Path, ops: list[tuple[Any, ...]]
) -> None:
    shutil.rmtree(projects, ignore_errors=True)
    shutil.copytree(CORPUS / "projects", projects)
    for op in ops:
        apply(projects, op)
        await asyncio.sleep(0.02)  # events of one op may or may not be merged with the next
    expected = checked(projects)
    got: list[tuple[str, int, str, str]] = []
    for _ in range(int(SETTLE / 0.2)):
        got = await served(client)
        if got == expected:
            break
        await asyncio.sleep(0.2)
    assert got == expected, ops
