"""A `--store` URL carrying a password is refused by every command, before anything connects: every user of the
machine can read a process's arguments (`ps`, /proc/PID/cmdline) for as long as it runs. The refusal names
PGPASSWORD and ~/.pgpass, shows the URL without its password, and writes nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from rawlsp import ROOT

SECRET = "s3cret-pw"
SID = "22222222-2222-4222-8222-222222222222"
URLS = [
    f"postgresql://postgres:{SECRET}@127.0.0.1:5432/postgres",
    f"postgresql://postgres@127.0.0.1:5432/postgres?sslmode=disable&password={SECRET}",
]


def _commands(url: str, projects: Path) -> list[list[str]]:
    return [
        ["list", "--store", url, "--json"],
        ["chain", SID, "--store", url],
        ["check", f"--store={url}", "--json"],
        ["search", "hello", "--store", url],
        ["fork", SID, "--store", url, "--into", "local", "--projects-dir", str(projects)],
        ["pull", SID, "--store", url, "--projects-dir", str(projects)],
        ["push", SID, "--store", url, "--projects-dir", str(projects)],
        ["turn", "--store", url, "--resume", SID, "--projects-dir", str(projects), "--provider", "anthropic", "hi"],
        ["serve", "--stdio", "--store", url],
    ]


@pytest.mark.parametrize("url", URLS, ids=["user-part", "parameter"])
def test_a_password_on_the_command_line_is_refused(url: str, tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    projects.mkdir()
    for args in _commands(url, projects):
        done = subprocess.run(
            [sys.executable, "-m", "server.cli", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
        assert done.returncode == 2, (args, done.stderr)
        assert "carries a password" in done.stderr and "PGPASSWORD" in done.stderr, (args, done.stderr)
        assert SECRET not in done.stderr + done.stdout, args
        assert done.stdout == "", args
    assert not any(projects.iterdir())
