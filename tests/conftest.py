"""Shared fixtures: copies of the real CLI corpus that tests may damage freely."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parent
CORPUS = TESTS / "corpus" / "claude-code-2.1.328"
AN_HOUR = 3600


def age(where: Path, seconds: int = AN_HOUR) -> None:
    """A file, or a folder and every entry below it, last modified `seconds` ago (settled: nobody wrote to it
    lately). Links are aged themselves, not followed."""
    when = time.time() - seconds
    for p in [where, *where.rglob("*")] if where.is_dir() else [where]:
        os.utime(p, (when, when), follow_symlinks=False)


def line_starts(path: Path, marks: Any, first: int = 0) -> list[int]:
    """The first byte of every line from `first` on, as `marks` (a `storage.linemarks.LineMarks`) finds them in the
    file at `path`: each line looked up on its own, as a diagnostic's range is."""
    with open(path, "rb") as fh:
        return [marks.start(fh, n) for n in range(first, marks.count)]


def starts_in(data: bytes) -> list[int]:
    """The first byte of every line of `data`, counted from its bytes (an unfinished last line is a line)."""
    starts = [0, *(i + 1 for i, byte in enumerate(data) if byte == 10)] if data else []
    return starts[:-1] if data.endswith(b"\n") else starts


class CountedReads:
    """A file as `LineMarks` reads it (`seek`, `read`), counting the bytes read."""

    def __init__(self, fh: Any) -> None:
        self.fh, self.bytes = fh, 0

    def seek(self, offset: int) -> int:
        return int(self.fh.seek(offset))

    def read(self, size: int) -> bytes:
        data = bytes(self.fh.read(size))
        self.bytes += len(data)
        return data


def generated_folder(factory: pytest.TempPathFactory, name: str, mb: int, seed: int) -> Path:
    """A projects folder of about `mb` MB generated as the benchmarks' (`bench.make_projects`), settled."""
    from bench.make_projects import make_projects

    folder = make_projects(factory.mktemp(name), total_mb=mb, seed=seed)
    age(folder)
    return folder


def child_json(script: str, payload: object, timeout: float) -> Any:
    """Run `script` in a child Python from the repository (its JSON argument: `payload`), which must exit 0; what
    it printed, as JSON."""
    import json

    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(payload)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=TESTS.parent,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


sys.path.insert(0, str(TESTS))

from rawlsp import RawServer  # noqa: E402
from scripted_api import SCRIPTED_KEY, SCRIPTED_MODEL, ScriptedModelServer  # noqa: E402


@pytest.fixture
def corpus_projects(tmp_path: Path) -> Path:
    """A writable copy of the shared corpus's projects folder."""
    dest = tmp_path / "projects"
    shutil.copytree(CORPUS / "projects", dest)
    for p in dest.rglob("*"):
        p.chmod(0o700 if p.is_dir() else 0o600)
    return dest


@pytest.fixture(scope="session")
def scripted_model() -> Iterator[ScriptedModelServer]:
    """One scripted test model on loopback for the whole run (the product ships no test double:
    tests point the real `anthropic` provider at it)."""
    with ScriptedModelServer() as model:
        yield model


@pytest.fixture(scope="module")
def claude() -> Path:
    """The real CLI's executable (`realcli.find_claude`); its tests skip loudly without it, which fails under CI."""
    from realcli import find_claude

    found = find_claude()
    if found is None:
        msg = "REAL CLI NOT AVAILABLE: run scripts/setup.d/claude-cli.sh (or set SESSION_LSP_CLAUDE)"
        print(f"\n{'!' * 70}\n{msg}\n{'!' * 70}", file=sys.stderr)
        pytest.skip(msg)
    return found


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModelServer]:
    """A scripted Messages API on loopback for one test module (modules needing other settings define their own)."""
    with ScriptedModelServer() as m:
        yield m


@pytest.fixture
def server(projects: Path) -> Iterator[RawServer]:
    """A real `serve --stdio` process on the `projects` folder, not watching it (modules serving another folder
    define their own)."""
    with RawServer() as s:
        s.initialize(projects, watch=False)
        yield s


def chattr_files(tmp_path: Path, flag: str) -> Iterator[list[Path]]:
    """For a fixture: the files a test gives the attribute `flag` (`chattr +FLAG`), listed by the test and cleared
    at the end (else tmp_path cannot be removed); skips where it cannot be set (it needs CAP_LINUX_IMMUTABLE on
    ext4/xfs/btrfs), which fails under CI."""
    probe = tmp_path / "probe"
    probe.write_bytes(b"x")
    if shutil.which("chattr") is None or subprocess.run(["chattr", f"+{flag}", str(probe)]).returncode != 0:
        pytest.skip(f"chattr +{flag} is not available here (needs CAP_LINUX_IMMUTABLE on ext4/xfs/btrfs)")
    subprocess.run(["chattr", f"-{flag}", str(probe)], check=True)
    made: list[Path] = []
    yield made
    for path in made:
        subprocess.run(["chattr", f"-{flag}", str(path)], check=False)


@pytest.fixture(autouse=True)
def private_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, scripted_model: ScriptedModelServer
) -> Path:
    """No test reads or writes the real `~/.claude` or `~/.cache`: HOME, XDG_CACHE_HOME and
    CLAUDE_CONFIG_DIR point into a fresh temp folder (subprocesses inherit them). The `anthropic`
    provider talks to the scripted test model (ANTHROPIC_BASE_URL, a dummy key, its model name)."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", scripted_model.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SCRIPTED_KEY)
    monkeypatch.setenv("ANTHROPIC_MODEL", SCRIPTED_MODEL)
    return home


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Under CI (`CI` set) a skip is a failure: a test that needs the real CLI, an editor or a
    database must not pass by skipping when its part could not be installed."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.skipped and os.environ.get("CI") and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.longrepr = f"skipped under CI, which counts as a failure: {reason}"


@pytest.fixture(scope="session")
def pg_server():  # type: ignore[no-untyped-def]
    """A real PostgreSQL server for the session (tests/pg.py). Under CI a test that needs one
    fails when it cannot start; elsewhere it skips loudly."""
    import os

    from pg import start_server

    try:
        server = start_server()
    except Exception as exc:  # noqa: BLE001 - any reason is reported
        if os.environ.get("CI"):
            pytest.fail(f"POSTGRESQL NOT AVAILABLE under CI: {exc}")
        pytest.skip(f"POSTGRESQL NOT AVAILABLE: {exc}")
    yield server
    server.remove()


@pytest.fixture
def pg_schema(request: pytest.FixtureRequest) -> str:
    """A schema name of its own for one test (stores of one test share it)."""
    import re
    import uuid

    base = re.sub(r"[^a-z0-9_]", "_", request.node.name.lower())[:40]
    return f"t_{base}_{uuid.uuid4().hex[:8]}"


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    """An empty projects folder in a config home of its own (modules may define their own)."""
    dest = tmp_path / "config" / "projects"
    dest.mkdir(parents=True)
    return dest


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A working directory for turns."""
    d = tmp_path / "work"
    d.mkdir()
    return d


@pytest.fixture
def marker() -> Iterator[str]:
    """A token in the test's never-ending commands, to find them and kill any a failure leaves behind."""
    from turnproc import reap

    token = f"hung-{uuid.uuid4().hex[:12]}"
    yield token
    reap(token)
