"""The wheel works outside the checkout: build it, install it in a fresh venv elsewhere, run the
command line and the server from there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


def _frame(message: dict[str, object]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_wheel_installs_and_runs_outside_the_checkout(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(REPO)], check=True, timeout=600
    )
    wheel = next(dist.glob("session_lsp-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, str(wheel)], check=True, timeout=900)
    exe = venv / "bin" / "session-lsp"
    away = tmp_path / "elsewhere"
    away.mkdir()
    env = {**os.environ, "HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "home" / ".claude")}
    env.pop("PYTHONPATH", None)

    version = subprocess.run([str(exe), "--version"], capture_output=True, text=True, cwd=away, env=env, timeout=60)
    assert version.returncode == 0 and version.stdout.strip().startswith("session-lsp ")

    overview = subprocess.run([str(exe), "overview"], capture_output=True, text=True, cwd=away, env=env, timeout=120)
    assert overview.returncode == 0, overview.stderr
    assert "bundled example" in overview.stdout and str(REPO) not in overview.stdout
    assert "3 session(s); problems: 0 error(s)" in overview.stdout  # the example ships with the wheel
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import server; print(server.__file__)"],
        capture_output=True,
        text=True,
        cwd=away,
        env=env,
        timeout=60,
    )
    assert str(venv) in where.stdout  # the installed package, not the checkout

    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"capabilities": {}, "initializationOptions": {"watch": False}},
    }
    messages = [init, {"jsonrpc": "2.0", "id": 2, "method": "shutdown"}, {"jsonrpc": "2.0", "method": "exit"}]
    served = subprocess.run(
        [str(exe), "serve", "-v"],
        input=b"".join(_frame(m) for m in messages),
        capture_output=True,
        cwd=away,
        env=env,
        timeout=120,
    )
    assert served.returncode == 0, served.stderr
    assert b'"serverInfo"' in served.stdout and b'"name": "session-lsp"' in served.stdout
    assert b"answered before the server loaded, from this server's capabilities" in served.stderr  # they ship too
