"""A Bash command reading the credentials from a process session-lsp started beside it, not above it.

The process that runs turns is marked not dumpable before a command runs (`server/agent/tools/concealed.py`), so
no process of its user reads its `/proc/<pid>/environ`; but what it starts runs a new program, dumpable again. The
live-session registry's guard child (`storage/livesession.py`: the second session one process registers is
recorded under a child that lives as long as it does) was started with the server's whole environment: a Bash
call of a turn that runs beside another read `ANTHROPIC_API_KEY`, `PGPASSWORD` and `SESSION_LSP_TOKEN` from it.
The real server over stdio as `nobody` (root reads every process's environment), two turns at once against the
scripted model, the second one's Bash reading every process's environment it can.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from nobody import NOBODY, cli_command, cli_env, give, shared_dir
from rawlsp import RawServer
from scripted_api import SCRIPTED_KEY, SCRIPTED_MODEL, ScriptedModelServer
from test_agent_support import rows

READ_EVERY_ENVIRON = (
    "{ for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < \"$f\" "
    "| grep -a -e '^ANTHROPIC_API_KEY=' -e '^PGPASSWORD=' -e '^SESSION_LSP_TOKEN=' "
    "| sed \"s|^|$f $(tr '\\0' ' ' < ${f%environ}cmdline) |\"; done; } 2>/dev/null; "
    "echo walked"
)
"""A command that prints the credentials of every process whose environment it may read, with its command line."""
LIVENESS = 120.0


@pytest.fixture
def shared() -> Iterator[Path]:
    yield from shared_dir()


@pytest.fixture
def slow_model() -> Iterator[ScriptedModelServer]:
    model = ScriptedModelServer(slow_interval=1.0)  # a SLOW reply takes 20 s: the first turn runs all along
    model.start()
    try:
        yield model
    finally:
        model.stop()


def test_bash_cannot_read_the_credentials_from_a_guard_beside_it(shared: Path, slow_model: ScriptedModelServer) -> None:
    home, work = shared / "home", shared / "work"
    config = home / ".claude"
    projects = config / "projects"
    projects.mkdir(parents=True)
    work.mkdir()
    give(home)
    give(work)
    secrets = {"PGPASSWORD": "store-password-that-must-not-leak", "SESSION_LSP_TOKEN": "server-token-not-to-leak-x"}
    env = cli_env(
        home,
        {
            "ANTHROPIC_BASE_URL": slow_model.base_url,
            "ANTHROPIC_API_KEY": SCRIPTED_KEY,
            "ANTHROPIC_MODEL": SCRIPTED_MODEL,
            "CLAUDE_CONFIG_DIR": str(config),
            **secrets,
        },
    )
    with RawServer(env=env, command=cli_command()) as server:
        server.initialize(projects, watch=False)
        first = server.request("sessions/runTurn", {"prompt": "SLOW a long reply", "cwd": str(work)})
        registry = config / "sessions"
        deadline = time.monotonic() + LIVENESS
        while not (registry.is_dir() and any(registry.glob("*.json"))):  # the first turn holds its session
            assert time.monotonic() < deadline, server.stderr[-2000:]
            assert first not in server.responses, server.responses[first]
            time.sleep(0.05)
        second = server.call(
            "sessions/runTurn",
            {"prompt": f"BASH {READ_EVERY_ENVIRON}", "cwd": str(work), "tools": ["Bash"]},
            timeout=LIVENESS,
        )
        assert "result" in second, second
        assert first not in server.responses  # the first turn was running all along: the second had a guard
        server.notify("$/cancelRequest", {"id": first})
        server.answer(first, timeout=LIVENESS)
        outputs = [
            str(block["content"])
            for r in rows(Path(second["result"]["path"]))
            if r.get("type") == "user" and isinstance(r["message"]["content"], list)
            for block in r["message"]["content"]
            if block.get("type") == "tool_result"
        ]
        assert len(outputs) == 1 and "walked" in outputs[0], outputs  # the command ran
        for secret in (SCRIPTED_KEY, *secrets.values()):
            assert secret not in outputs[0], outputs[0]


def _readable_environs(uid: int, skip: int, needle: bytes) -> tuple[set[int], set[int]]:
    """(pids of `uid` but `skip` running, pids of them whose environment a process of `uid` may read holding
    `needle`): a process not dumpable has its `/proc` files owned by root."""
    running, leaking = set(), set()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == skip:
            continue
        try:
            if os.stat(f"/proc/{name}").st_uid != uid and os.stat(f"/proc/{name}/status").st_uid != uid:
                continue
            with open(f"/proc/{name}/status") as fh:
                if f"Uid:\t{uid}\t" not in fh.read():
                    continue
            running.add(int(name))
            if os.stat(f"/proc/{name}/environ").st_uid == uid and needle in Path(f"/proc/{name}/environ").read_bytes():
                leaking.add(int(name))
        except OSError:
            continue
    return running, leaking


def test_the_first_index_workers_keep_the_credentials_from_a_bash_run_meanwhile(shared: Path) -> None:
    """A turn started as the editor opens runs beside the first index's workers, forked before the server was
    concealed (it was, at its first command): they were dumpable, their environment the server's. Looked at from
    outside while the first index of a folder of 80 MB is read: no process of the server's user but the server may
    be read for the key (a Bash command is such a process)."""
    from bench.make_projects import make_projects

    home = shared / "home"
    home.mkdir()
    projects = make_projects(shared / "big", total_mb=80, seed=3)
    give(home)
    give(shared / "big")
    key = "provider-key-that-must-not-leak"
    env = cli_env(home, {"ANTHROPIC_API_KEY": key, "XDG_CACHE_HOME": str(home / ".cache")})
    others: set[int] = set()
    leaking: set[int] = set()
    with RawServer(env=env, command=cli_command()) as server:
        server.initialize(projects, watch=False)
        listed = server.request("sessions/list", {})
        deadline = time.monotonic() + LIVENESS
        while listed not in server.responses:
            assert time.monotonic() < deadline, server.stderr[-2000:]
            running, leaked = _readable_environs(NOBODY, server.proc.pid, key.encode())
            others |= running
            leaking |= leaked
            time.sleep(0.02)
        assert "result" in server.responses[listed], server.responses[listed]
    assert others, "no worker was seen: the first index ran in the server alone"
    assert not leaking, f"processes {sorted(leaking)} of the server showed the key"
