"""Run the real Claude Code CLI fully offline against the scripted test model (for tests).

``find_claude()`` locates the pinned binary (installed by ``scripts/setup.d/claude-cli.sh``) and
``run_claude()`` runs it in print mode with a private config dir and home, pointed at a local
Messages-API endpoint, with every kind of non-essential traffic switched off.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from scripted_api import SCRIPTED_KEY

REPO = Path(__file__).resolve().parent.parent
OPT_CLAUDE = Path("/opt/claude-cli/node_modules/@anthropic-ai/claude-code-linux-x64/claude")
_CACHE = REPO / ".cache" / "claude-cli"
_CACHE_CANDIDATES = [
    _CACHE / "claude",
    _CACHE / "node_modules/@anthropic-ai/claude-code-linux-x64/claude",
    _CACHE / "node_modules/@anthropic-ai/claude-code-linux-x64-musl/claude",
    _CACHE / "node_modules/@anthropic-ai/claude-code-linux-arm64/claude",
    _CACHE / "node_modules/@anthropic-ai/claude-code-darwin-arm64/claude",
    _CACHE / "node_modules/@anthropic-ai/claude-code-darwin-x64/claude",
    _CACHE / "node_modules/@anthropic-ai/claude-code/bin/claude.exe",
]
# Tools the scripted test model calls; allowed on the command line so print mode never asks.
ALLOWED_TOOLS = ("Read", "LS", "Glob", "Grep", "Agent")
DUMMY_KEY = "sk-ant-test-dummy"
OFFLINE_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "DISABLE_COST_WARNINGS": "1",
    "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
    "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
    "CLAUDE_CODE_ENABLE_TELEMETRY": "0",
}


def _usable(path: Path) -> bool:
    try:
        return path.is_file() and os.access(path, os.X_OK) and path.stat().st_size > 1_000_000
    except OSError:
        return False


def find_claude() -> Path | None:
    """The real CLI binary: $SESSION_LSP_CLAUDE, the repo cache, ``claude`` on PATH, /opt; else None."""
    override = os.environ.get("SESSION_LSP_CLAUDE")
    if override:
        return Path(override) if _usable(Path(override)) else None
    for candidate in _CACHE_CANDIDATES:
        if _usable(candidate):
            return candidate
    on_path = shutil.which("claude")
    if on_path and os.access(on_path, os.X_OK):
        return Path(on_path)
    return OPT_CLAUDE if _usable(OPT_CLAUDE) else None


def claude_env(*, config_dir: Path, base_url: str, home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A clean environment: private config dir and home, the scripted endpoint, no telemetry."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(config_dir),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": DUMMY_KEY,
        **OFFLINE_ENV,
    }
    if extra:
        env.update(extra)
    return env


def provider_env(claude: Path, base_url: str, home: Path, tmp: Path, **extra: str) -> dict[str, str]:
    """The environment of a `claude-cli` provider turn (`TurnRequest.env`) against a scripted model: the real CLI at
    `claude`, a home of its own, its scratch files in `tmp`, no telemetry, and `extra`."""
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "SESSION_LSP_CLAUDE": str(claude),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": SCRIPTED_KEY,
        "CLAUDE_CODE_TMPDIR": str(tmp),
        **extra,
        **OFFLINE_ENV,
    }


def _kill_group(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def run_claude(
    args: Sequence[str],
    *,
    cwd: str | Path,
    config_dir: str | Path,
    base_url: str,
    timeout: float = 120,
    kill_after: float | None = None,
    home: str | Path | None = None,
    env: dict[str, str] | None = None,
    allowed_tools: Sequence[str] | None = ALLOWED_TOOLS,
    claude: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``claude -p ... <args>`` offline; SIGKILL it after ``kill_after`` seconds if given.

    ``args`` are the CLI arguments after ``-p`` (e.g. ``["READ /x", "--session-id", sid]``).
    ``home`` defaults to ``<config_dir>/../home`` and ``CLAUDE_CODE_TMPDIR`` to
    ``<config_dir>/../tmp``; ``env`` adds or overrides variables. A killed run returns returncode -9; a run that
    outlives ``timeout`` is killed and raises ``subprocess.TimeoutExpired``.
    """
    binary = claude or find_claude()
    if binary is None:
        raise FileNotFoundError("REAL CLI NOT AVAILABLE: run scripts/setup.d/claude-cli.sh")
    config_dir = Path(config_dir)
    home_dir = Path(home) if home is not None else config_dir.parent / "home"
    tmp_dir = config_dir.parent / "tmp"  # the CLI's scratch files (task outputs), not /tmp/claude-<uid>
    for folder in (config_dir, home_dir, tmp_dir):
        folder.mkdir(parents=True, exist_ok=True)
    extra = {"CLAUDE_CODE_TMPDIR": str(tmp_dir), **(env or {})}
    cmd = [str(binary), "-p", *args]
    if allowed_tools:
        cmd += ["--allowedTools", ",".join(allowed_tools)]
    proc = subprocess.Popen(
        cmd,
        cwd=str(cwd),
        env=claude_env(config_dir=config_dir, base_url=base_url, home=home_dir, extra=extra),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
        start_new_session=True,
    )
    deadline = time.monotonic() + timeout
    try:
        if kill_after is not None:
            try:
                out, err = proc.communicate(timeout=min(kill_after, timeout))
                return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                out, err = proc.communicate(timeout=10)
                return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
        out, err = proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.communicate(timeout=10)
        raise
