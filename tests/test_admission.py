"""One writer per session, decided atomically: racing turns in one server, racing writer
processes, the real CLI's registry of live sessions, and rename/tag against a running turn."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from lspserver import SERVER, open_session
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient
from turnproc import ROOT, TurnProcess, cli_env, new_session, refused_while_held, session_lsp

from server.lsp.server import to_plain

REQUEST_FAILED = -32803
LIVENESS = 10.0
"""A hang detector, not a speed requirement."""


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, projects: Path):  # type: ignore[no-untyped-def]
    await open_session(lsp_client, projects)
    yield
    await lsp_client.shutdown_session()


async def call(client: LanguageClient, method: str, params: object, msg_id: str | None = None) -> object:
    return to_plain(await client.protocol.send_request_async(method, params, msg_id=msg_id))


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def _assert_in_use(exc: BaseException, holder_pid: int | None = None) -> dict:
    """A RequestFailed error with `data.reason` in-use that names a live holder; its data."""
    assert isinstance(exc, JsonRpcException), repr(exc)
    data = to_plain(exc.data) or {}
    assert exc.code == REQUEST_FAILED, f"code {exc.code}: {exc.message}"
    assert data.get("reason") == "in-use", data
    pid = data.get("holder", {}).get("pid")
    assert isinstance(pid, int) and str(pid) in exc.message, (exc.message, data)
    if holder_pid is not None:
        assert pid == holder_pid, (pid, holder_pid)
    return data


# -- (a) two runTurn on one session, back to back, one server --------------------------------
async def test_two_turns_on_one_session_one_is_refused(client: LanguageClient, work: Path) -> None:
    first = await call(client, "sessions/runTurn", {"prompt": "hello", "cwd": str(work), "provider": "anthropic"})
    sid, path = first["sessionId"], Path(first["path"])
    for round_ in range(3):
        prompts = [f"SLOW round {round_} writer A", f"SLOW round {round_} writer B"]
        ids = [f"race-{round_}-a", f"race-{round_}-b"]
        futures = [
            asyncio.ensure_future(
                client.protocol.send_request_async(
                    "sessions/runTurn", {"sessionId": sid, "prompt": p, "provider": "anthropic"}, msg_id=i
                )
            )
            for p, i in zip(prompts, ids)
        ]
        done, _ = await asyncio.wait(futures, timeout=30, return_when=asyncio.FIRST_COMPLETED)
        assert done, "neither turn was answered in 30 s"
        loser = next(iter(done))
        assert len(done) == 1, "both turns ended at once: both were admitted (or both refused)"
        exc = loser.exception()
        data = _assert_in_use(exc)
        assert "serve" in _cmdline(data["holder"]["pid"])  # the holder is a live server process
        lost = futures.index(loser)
        won = 1 - lost
        client.protocol.notify("$/cancelRequest", lsp.CancelParams(id=ids[won]))  # no need to wait 4 s
        with pytest.raises(JsonRpcException):
            await asyncio.wait_for(futures[won], LIVENESS)
        text = path.read_text()
        assert prompts[won] in text
        assert prompts[lost] not in text, f"the refused turn's prompt was written (round {round_})"
        print(f"round {round_}: writer {'AB'[won]} admitted, {'AB'[lost]} refused: {exc.message}")
    # the session is free again
    again = await call(client, "sessions/runTurn", {"sessionId": sid, "prompt": "after", "provider": "anthropic"})
    assert again["text"] == "echo: after"


# -- (b) two writer processes started together ------------------------------------------------
ADOPT = """
import sys
from pathlib import Path
from storage.recorder import SessionRecorder
path, config, tag = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
print("ready", flush=True)
sys.stdin.buffer.read(1)  # the barrier: both are released by one write of the parent
try:
    rec = SessionRecorder.adopt(path, config_dir=config)
except Exception as exc:
    print(f"refused: {exc}", file=sys.stderr, flush=True)
    sys.exit(2)
rec.record_prompt(f"ADOPTED BY {tag}")
rec.flush()
print("admitted", flush=True)
sys.stdin.buffer.read(1)  # hold the session until the parent has seen the other one decided
rec.close()
"""


def test_twenty_races_of_two_adopting_processes(projects: Path, work: Path) -> None:
    """Two processes adopt one session at the same instant (released by one barrier), 20 times:
    exactly one is admitted each time, the other is refused and writes nothing."""
    sid, path = new_session(projects, work)
    both_admitted = 0
    for trial in range(20):
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", ADOPT, str(path), str(projects.parent), f"{trial}{tag}"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=ROOT,
            )
            for tag in "AB"
        ]
        for p in procs:  # both are past their imports, blocked on the barrier
            assert p.stdout.readline().strip() == b"ready"  # type: ignore[union-attr]
        for p in procs:
            p.stdin.write(b"g")  # type: ignore[union-attr]  # one byte: the second read(1) must block
        for p in procs:
            p.stdin.flush()  # type: ignore[union-attr]
        outcome = {}
        for tag, p in zip("AB", procs):
            line = p.stdout.readline()  # type: ignore[union-attr]  # "admitted", or EOF when refused
            outcome[tag] = "admitted" if line.strip() == b"admitted" else "refused"
        for p in procs:
            p.stdin.close()  # type: ignore[union-attr]
        codes = [p.wait(timeout=LIVENESS) for p in procs]
        errors = [p.stderr.read().decode() for p in procs]  # type: ignore[union-attr]
        admitted = [t for t in "AB" if outcome[t] == "admitted"]
        both_admitted += len(admitted) == 2
        assert len(admitted) == 1, f"trial {trial}: admitted {admitted}; exits {codes}; {errors}"
        loser = "B" if admitted == ["A"] else "A"
        i = "AB".index(loser)
        assert codes[i] == 2 and "in use" in errors[i], errors[i]
        assert f"pid {procs['AB'.index(admitted[0])].pid}" in errors[i], f"trial {trial}: holder not named: {errors[i]}"
        text = path.read_text()
        assert f"ADOPTED BY {trial}{admitted[0]}" in text
        assert f"ADOPTED BY {trial}{loser}" not in text
    print(f"20 races: 20 times exactly one writer admitted ({both_admitted} with both)")


CLI_TRIALS = 5
"""Each trial starts two Python processes with the whole agent: the 20 races above are the
library's; these check what the command line makes of the same decision."""


def test_races_of_two_turn_commands(projects: Path, work: Path, marker: str) -> None:
    """Two `session-lsp turn --resume` processes started together on one session, CLI_TRIALS times:
    one runs, the other exits 2 with one line naming the holder's pid, its prompt nowhere. Each
    runs a command that never ends (`sleep 600`), so the winner holds the session however slowly
    the loser starts; the winner is then stopped with Ctrl-C."""
    sid, path = new_session(projects, work)
    refusals: list[str] = []
    for trial in range(CLI_TRIALS):
        began = time.monotonic()
        prompts = [f"BASH sleep 600; echo {marker} trial {trial} writer {t}" for t in "AB"]
        procs = [TurnProcess(projects, work, p, "--resume", sid, "--allow", "Bash") for p in prompts]
        try:
            while all(p.proc.poll() is None for p in procs):
                assert time.monotonic() - began < 60, f"trial {trial}: neither writer ended in 60 s"
                time.sleep(0.02)
            lost = next(i for i, p in enumerate(procs) if p.proc.poll() is not None)
            won = 1 - lost
            rc_lost, _ = procs[lost].wait(LIVENESS)
            assert rc_lost == 2, f"trial {trial}: the first to end exited {rc_lost}: {procs[lost].stderr!r}"
            lines = procs[lost].stderr.decode().strip().splitlines()
            assert len(lines) == 1, lines
            assert "in use" in lines[0] and f"pid {procs[won].pid}" in lines[0], (lines[0], procs[won].pid)
            refusals.append(lines[0])
            procs[won].interrupt()  # Ctrl-C the winner rather than wait for its slow reply
            rc_won, took = procs[won].wait(LIVENESS)
            assert rc_won == 130, (rc_won, procs[won].stderr[-800:])
            text = path.read_text()
            assert prompts[won] in text
            assert prompts[lost] not in text, f"trial {trial}: the refused writer's prompt is in the file"
            print(f"trial {trial}: {time.monotonic() - began:.1f} s, the winner ended {took:.2f} s after Ctrl-C")
        finally:
            for p in procs:
                p.kill()
    print(f"{CLI_TRIALS} races of two turn processes: {len(refusals)} refusals, e.g. {refusals[0]!r}")


# -- (c) the real CLI's registry ------------------------------------------------------------
def _register_cli(config: Path, pid: int, sid: str, cwd: Path) -> Path:
    """A record as Claude Code 2.1.328 writes it for a running interactive session."""
    from storage.procinfo import proc_start

    record = {
        "pid": pid,
        "sessionId": sid,
        "cwd": str(cwd),
        "startedAt": int(time.time() * 1000),
        "procStart": proc_start(pid),
        "version": "2.1.328",
        "kind": "interactive",
        "entrypoint": "cli",
    }
    folder = config / "sessions"
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / f"{pid}.json"
    path.write_text(json.dumps(record))
    path.chmod(0o600)
    return path


async def test_a_live_cli_session_refuses_our_writers(client: LanguageClient, projects: Path, work: Path) -> None:
    first = await call(client, "sessions/runTurn", {"prompt": "hello", "cwd": str(work), "provider": "anthropic"})
    sid, path = first["sessionId"], Path(first["path"])
    config = projects.parent
    # a dead CLI's record does not hold the session
    dead = subprocess.Popen(["true"])
    dead.wait()
    _register_cli(config, dead.pid, sid, work)
    ok = await call(client, "sessions/runTurn", {"sessionId": sid, "prompt": "while dead", "provider": "anthropic"})
    assert ok["text"] == "echo: while dead"
    live = subprocess.Popen(["sleep", "300"])  # stands for the running CLI process: a real live pid
    try:
        _register_cli(config, live.pid, sid, work)
        before = path.read_bytes()
        with pytest.raises(JsonRpcException) as caught:
            await call(
                client, "sessions/runTurn", {"sessionId": sid, "prompt": "REFUSED TURN", "provider": "anthropic"}
            )
        data = _assert_in_use(caught.value)
        assert data["holder"]["pid"] == live.pid
        for args in (
            ["turn", "--resume", sid, "--cwd", str(work), "--provider", "anthropic", "REFUSED CLI TURN"],
            ["rename", sid, "REFUSED TITLE"],
            ["tag", sid, "refused-tag"],
        ):
            done = session_lsp(*args, "--projects-dir", str(projects), config=config)
            lines = done.stderr.strip().splitlines()
            assert done.returncode == 2 and len(lines) == 1, (args[0], done.returncode, done.stderr[-800:])
            assert f"pid {live.pid}" in lines[0], lines[0]
        assert path.read_bytes() == before, "a refused writer appended to the session"
    finally:
        live.kill()
        live.wait()
    # the CLI is gone: the session is ours again
    again = await call(client, "sessions/runTurn", {"sessionId": sid, "prompt": "after", "provider": "anthropic"})
    assert again["text"] == "echo: after"


def test_rename_and_tag_refused_while_a_turn_holds(projects: Path, work: Path, marker: str) -> None:
    sid, path = new_session(projects, work)
    holder = TurnProcess(projects, work, f"BASH sleep 600; echo {marker} holding", "--resume", sid, "--allow", "Bash")
    refused_while_held(holder, sid, path, "--projects-dir", str(projects), config=projects.parent)
    # once the turn is over, the same rename goes through
    done = session_lsp("rename", sid, "TITLE AFTER", "--projects-dir", str(projects), config=projects.parent)
    assert done.returncode == 0, done.stderr
    titles = [json.loads(line).get("customTitle") for line in path.read_text().splitlines()]
    assert titles[-1] == "TITLE AFTER"


def test_adopt_in_one_process_is_refused_while_another_holds(projects: Path, work: Path) -> None:
    """The library's own error for a second writer: `InUse` naming the holder, before any row."""
    from storage.errors import InUse
    from storage.recorder import SessionRecorder

    sid, path = new_session(projects, work)
    holder = subprocess.Popen(
        [sys.executable, "-c", ADOPT, str(path), str(projects.parent), "HOLDER"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=cli_env(projects.parent),
    )
    try:
        assert holder.stdout.readline().strip() == b"ready"  # type: ignore[union-attr]
        holder.stdin.write(b"g")  # type: ignore[union-attr]
        holder.stdin.flush()  # type: ignore[union-attr]
        assert holder.stdout.readline().strip() == b"admitted"  # type: ignore[union-attr]
        size = os.path.getsize(path)
        with pytest.raises(InUse) as caught:
            SessionRecorder.adopt(path, config_dir=projects.parent)
        assert caught.value.holder.get("pid") == holder.pid
        assert os.path.getsize(path) == size
    finally:
        holder.stdin.close()  # type: ignore[union-attr]
        holder.wait(timeout=LIVENESS)


def test_a_forked_child_does_not_keep_a_released_session(projects: Path, work: Path) -> None:
    """A process forked while a writer is admitted (the server's index workers) shares the locks' open file
    descriptions; once the writer releases, the session is free though the child still runs."""
    from storage.admission import admit

    sid, path = new_session(projects, work)
    held = admit(sid, config_dir=projects.parent, register=False, transcript=path)
    child = os.fork()
    if child == 0:  # the forked child: it only lives on for a while, as a worker does
        time.sleep(5)
        os._exit(0)
    try:
        held.release()
        with admit(sid, config_dir=projects.parent, register=False, transcript=path) as again:
            assert again.held and again.holds_file
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
