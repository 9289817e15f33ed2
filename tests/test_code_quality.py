"""The code checks CI enforces through pytest: `ruff check`, `ruff format --check` and mypy (strict on
`storage/` and `server/`, as configured in pyproject.toml), each run from this venv over the repository."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

CHECKS = {
    "ruff check": [sys.executable, "-m", "ruff", "check", "--no-fix", "."],
    "ruff format --check": [sys.executable, "-m", "ruff", "format", "--check", "."],
    "mypy": [sys.executable, "-m", "mypy"],
}


@pytest.mark.parametrize("name", list(CHECKS))
def test_check_reports_nothing(name: str) -> None:
    done = subprocess.run(CHECKS[name], cwd=REPO, capture_output=True, text=True, timeout=600)
    report = (done.stdout + done.stderr).strip()
    if done.returncode != 0:
        pytest.fail(f"`{name}` found problems (exit {done.returncode}):\n{report}", pytrace=False)
