"""What each command imports at start-up: the Anthropic SDK, pygls and watchdog only where they are used.

Each command runs as a real process under `-X importtime`; the modules it imported are read from that
report. Nothing here measures time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
HEAVY = ("anthropic", "pygls", "lsprotocol", "watchdog", "httpx")


def imported_modules(
    args: list[str], env: dict[str, str] | None = None
) -> tuple[set[str], subprocess.CompletedProcess]:
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "server.cli", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    names = set()
    for line in run.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    assert names, run.stderr[-2000:]
    return names, run


def top_level(names: set[str]) -> set[str]:
    return {n.split(".")[0] for n in names}


def first_session(projects: Path) -> Path:
    return sorted(projects.glob("*/*.jsonl"))[0]


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["--version"],
        ["list", "--help"],
        ["check", "--help"],
        ["serve", "--help"],
        ["turn", "--help"],
        ["fork", "--help"],
    ],
)
def test_help_imports_nothing_heavy(args: list[str]) -> None:
    names, run = imported_modules(args)
    assert run.returncode == 0, run.stderr[-2000:]
    assert not top_level(names) & set(HEAVY)
    if args[0].startswith("-"):
        assert not any(n.startswith("server.commands.") and n != "server.commands.common" for n in names)


def test_help_lists_every_command_without_importing_them() -> None:
    names, run = imported_modules(["--help"])
    for command in ("list", "chain", "overview", "check", "fork", "rename", "tag", "serve", "turn"):
        assert f"    {command} " in run.stdout
    assert "server.agent.loop" not in names and "server.index" not in names


def test_version_comes_from_the_package_metadata() -> None:
    from importlib.metadata import version

    run = subprocess.run([sys.executable, "-m", "server.cli", "--version"], capture_output=True, text=True, cwd=REPO)
    assert run.returncode == 0
    assert run.stdout.strip() == f"session-lsp {version('session-lsp')}"


def test_read_commands_import_only_their_module(corpus_projects: Path) -> None:
    for args in (
        ["list", "--projects-dir", str(corpus_projects), "--json"],
        ["chain", str(first_session(corpus_projects)), "--json", "--projects-dir", str(corpus_projects)],
        ["check", "--projects-dir", str(corpus_projects), "--json", "-j", "1"],
        ["check", str(first_session(corpus_projects)), "--json"],
    ):
        names, run = imported_modules(args)
        assert run.returncode in (0, 1), (args, run.stderr[-2000:])
        assert run.stdout.lstrip().startswith("[") or run.stdout.lstrip().startswith("{")
        assert not top_level(names) & set(HEAVY), (args, top_level(names) & set(HEAVY))
        assert "server.agent" not in names
        assert "server.commands.turn" not in names and "server.commands.serve" not in names


def test_turn_without_a_provider_does_not_import_the_sdk(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_") and k != "SESSION_LSP_CLAUDE"}
    env["PATH"] = str(Path(sys.executable).parent)  # no `claude` here
    env["HOME"] = str(tmp_path)
    names, run = imported_modules(
        ["turn", "--new", "--cwd", str(tmp_path), "--projects-dir", str(tmp_path / "projects"), "hello"], env=env
    )
    assert run.returncode == 2 and "no model provider available" in run.stderr
    assert "server.agent.loop" in names
    assert "anthropic" not in names and "pygls" not in top_level(names)


def test_claude_cli_provider_does_not_import_the_sdk() -> None:
    code = (
        "import sys\nfrom server.agent.providers.choose import make_provider\n"
        f"p = make_provider('claude-cli', env={{'SESSION_LSP_CLAUDE': {sys.executable!r}}})\n"
        "print(p.name, 'anthropic' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["claude-cli", "False"]


def test_list_answered_by_the_index_reads_no_transcript(corpus_projects: Path) -> None:
    """A second `list --json` with nothing changed takes every summary and usage total from the index: the
    line reader, the link decoder (msgspec), the usage parser and the responses cache are never imported."""
    for p in corpus_projects.rglob("*"):
        os.utime(p, (1_700_000_000, 1_700_000_000))  # settled: the index may take the files as unchanged
    args = ["list", "--projects-dir", str(corpus_projects), "--json"]
    first, run = imported_modules(args)
    assert run.returncode == 0, run.stderr[-2000:]
    assert {"storage.usage", "storage.usagecache"} <= first  # the first run reads the files
    again, run = imported_modules(args)
    assert run.returncode == 0, run.stderr[-2000:]
    assert not again & {"msgspec", "storage.reader", "storage.linkdecode", "storage.usage", "storage.usagecache"}


def test_serve_loads_neither_tools_nor_stores_before_its_first_answers(tmp_path: Path) -> None:
    """Over stdio, `serve` answers its first requests from what it kept before it loads pygls
    (`server.lsp.early`): what it imports before that module is its whole start, and holds neither the agent's tools
    (becoming a child subreaper needs only `server.subreaper`) nor the session stores' module (no `--store`)."""
    exit_frame = b'{"jsonrpc":"2.0","method":"exit"}'
    stdin = b"Content-Length: %d\r\n\r\n%s" % (len(exit_frame), exit_frame)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "server.cli", "serve", "--stdio", "--projects-dir", str(tmp_path)],
        input=stdin, capture_output=True, cwd=REPO, env=env, timeout=120,
    )  # fmt: skip
    order = [
        line.rsplit("|", 1)[1].strip()
        for line in run.stderr.decode(errors="replace").splitlines()
        if line.startswith("import time:") and "|" in line
    ]
    assert "server.lsp.early" in order, run.stderr[-2000:]
    before = set(order[: order.index("server.lsp.early")])
    assert "server.subreaper" in before
    assert not {n for n in before if n.startswith(("server.agent", "storage.store_source", "storage.pgstore"))}
    assert not top_level(before) & set(HEAVY)
