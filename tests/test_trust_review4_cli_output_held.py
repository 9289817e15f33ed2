"""A `claude-cli` turn ends when the real CLI ends, whatever its Bash tool left holding the CLI's output.

The provider relayed the CLI's stream until end of file on its standard output. A command the CLI's Bash ran could
leave a job holding that pipe (`/proc/$PPID/fd/1`: the CLI, a process of the same user, is dumpable), and the
turn then never ended after the CLI had: `session-lsp turn` hung with the session's admission held (as long as the
job ran, for good with `sleep infinity`), and in the server the turn kept one of the four places. The anthropic
provider's Bash already gives a command's output `DRAIN_S` once the command ended; the CLI's stream gets the same.

Real processes: the real `session-lsp turn`, the real CLI, the scripted model; the job holds a unique marker. The only
bound is a liveness one (the job would run 600 s).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from rawlsp import LIVENESS
from realcli import find_claude, provider_env
from scripted_api import ScriptedModelServer
from turnproc import ROOT, cli_env, live_with

pytestmark = pytest.mark.realcli


def holding(marker: str) -> str:
    """Leaves a job, in a session of its own, holding the CLI's standard output and error; returns at once."""
    return f"(setsid bash -c 'sleep 600; : {marker}' >/proc/$PPID/fd/1 2>/proc/$PPID/fd/2 &); echo started"


def test_a_turn_ends_when_the_cli_does_though_a_job_holds_its_output(tmp_path: Path, marker: str) -> None:
    claude = find_claude()
    if claude is None:
        pytest.skip("REAL CLI NOT AVAILABLE: run scripts/setup.d/claude-cli.sh (or set SESSION_LSP_CLAUDE)")
    work, home, projects = tmp_path / "work", tmp_path / "home", tmp_path / "config" / "projects"
    work.mkdir()
    home.mkdir()
    with ScriptedModelServer(slow_interval=0.0) as model:
        env = {
            **cli_env(projects.parent),
            **provider_env(claude, model.base_url, home, tmp_path / "tmp", PATH=os.environ["PATH"]),
        }
        argv = ["turn", "--new", "--cwd", str(work), "--projects-dir", str(projects), "--provider", "claude-cli"]
        turn = subprocess.Popen(
            [sys.executable, "-m", "server.cli", *argv, "--json", "--allow", "Bash", f"BASH {holding(marker)}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env=env,
        )
        try:
            try:
                # the CLI's own start and two model requests, then at most the liveness bound for the turn to end
                out, err = turn.communicate(timeout=60 + LIVENESS)
            except subprocess.TimeoutExpired:
                left = [Path(f"/proc/{p}/cmdline").read_bytes()[:60] for p in live_with(marker)]
                pytest.fail(f"the turn never ended after the CLI did; still running: {left}")
            assert turn.returncode == 0, err.decode(errors="replace")
            result = json.loads(out)
            assert result["stopReason"] == "end_turn", result
            assert "I read it (1 tool results)." in result["text"], result
        finally:
            turn.kill()
            for pid in live_with(marker):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
