"""The PostgreSQL fixture: a test that needs the server fails under CI when it cannot start, and
skips loudly elsewhere."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def run_store_test(ci: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["SLSP_PG_BINDIR"] = str(TESTS / "no-such-postgres")
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(TESTS / "test_pgstore.py"),
            "-q",
            "-rsf",
            "-p",
            "no:cacheprovider",
            "-k",
            "repeated_uuid",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=TESTS.parent,
    )


def test_under_ci_a_missing_server_fails_the_test() -> None:
    done = run_store_test(ci=True)
    assert done.returncode == 1, done.stdout[-2000:]
    assert "POSTGRESQL NOT AVAILABLE under CI: POSTGRESQL NOT AVAILABLE: initdb not found" in done.stdout
    assert "1 error" in done.stdout or "1 failed" in done.stdout


def test_elsewhere_a_missing_server_skips_loudly() -> None:
    done = run_store_test(ci=False)
    assert done.returncode == 0, done.stdout[-2000:]
    assert "1 skipped" in done.stdout
    assert "POSTGRESQL NOT AVAILABLE" in done.stdout
