"""Everything can be stopped: a turn hung in a tool (`sleep 600` through the Bash tool, asked for
by the scripted test model's `BASH <command>`) ends on `$/cancelRequest`, on Ctrl-C, at `exit`;
cancelled turns free their place; turns past the bound are refused. Times are measured and
printed; the only bound is a liveness one (LIVENESS seconds: longer means stuck)."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from rawlsp import LIVENESS, RawServer
from turnproc import TurnProcess, children, commands_with, new_session, session_lsp, wait_gone

from storage.recorder import INTERRUPTED_FOR_TOOL_USE, REJECTED_TOOL_USE

REQUEST_CANCELLED = -32800
REQUEST_FAILED = -32803
INVALID_PARAMS = -32602


def hung(marker: str, n: int = 0) -> str:
    return f"BASH sleep 600; echo {marker} {n}"


def start_hung_turn(server: RawServer, work: Path, marker: str, n: int, **extra: Any) -> str:
    """A runTurn whose Bash call never ends; returns once the command runs."""
    msg_id = f"turn-{marker}-{n}"
    token = f"progress-{n}"
    server.request(
        "sessions/runTurn",
        {
            "prompt": hung(marker, n),
            "cwd": str(work),
            "provider": "anthropic",
            "tools": ["Bash"],
            "workDoneToken": token,
            **extra,
        },
        msg_id=msg_id,
    )
    server.wait_progress(token, "[tool Bash")
    deadline = time.monotonic() + LIVENESS
    while not any(f"{marker} {n}".encode() in Path(f"/proc/{p}/cmdline").read_bytes() for p in commands_with(marker)):
        assert time.monotonic() < deadline, "the hung command never started"
        time.sleep(0.05)
    return msg_id


def cancel(server: RawServer, msg_id: str) -> tuple[dict[str, Any], float]:
    began = time.monotonic()
    server.notify("$/cancelRequest", {"id": msg_id})
    reply = server.answer(msg_id, timeout=LIVENESS)
    return reply, time.monotonic() - began


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def assert_interrupted_in_tool(path: Path) -> None:
    """The file ends its conversation as the CLI records Esc during a tool call: the call answered
    with the rejection, then `[Request interrupted by user for tool use]`; and it resumes."""
    messages = [r for r in rows(path) if r.get("type") in ("user", "assistant")]
    last = messages[-1]["message"]["content"]
    assert last == [{"type": "text", "text": INTERRUPTED_FOR_TOOL_USE}], last
    result = messages[-2]["message"]["content"][0]
    assert result["type"] == "tool_result" and result["content"] == REJECTED_TOOL_USE and result["is_error"]
    call = messages[-3]["message"]["content"][0]
    assert call["type"] == "tool_use" and call["name"] == "Bash" and call["id"] == result["tool_use_id"]
    chained = session_lsp(
        "chain", str(path), "--projects-dir", str(path.parent.parent), "--json", config=path.parent.parent.parent
    )
    assert chained.returncode == 0, chained.stderr
    sent = json.loads(chained.stdout)["messages"]
    assert sent[-1] == {"role": "assistant", "content": [{"type": "text", "text": "No response requested."}]}
    assert {"type": "text", "text": INTERRUPTED_FOR_TOOL_USE} in sent[-2]["content"]


def test_cancel_a_turn_hung_in_a_tool(server: RawServer, work: Path, marker: str) -> None:
    first = server.call("sessions/runTurn", {"prompt": "hello", "cwd": str(work), "provider": "anthropic"})["result"]
    path = Path(first["path"])
    msg_id = start_hung_turn(server, work, marker, 0, sessionId=first["sessionId"])
    reply, answered = cancel(server, msg_id)
    assert "error" in reply and reply["error"]["code"] == REQUEST_CANCELLED, reply
    gone = wait_gone(marker, LIVENESS)
    assert gone is not None, "the hung command outlived the cancelled turn"
    began = time.monotonic()
    while INTERRUPTED_FOR_TOOL_USE not in path.read_text():
        assert time.monotonic() - began < LIVENESS, "the cancelled turn never recorded its interruption"
        time.sleep(0.05)
    print(
        f"cancel answered after {answered:.2f} s; the command was gone {gone:.2f} s later; "
        f"interruption on disk {time.monotonic() - began:.2f} s after that"
    )
    assert_interrupted_in_tool(path)
    again = server.call(
        "sessions/runTurn", {"sessionId": first["sessionId"], "prompt": "after", "provider": "anthropic"}, timeout=60
    )
    assert again.get("result", {}).get("text") == "echo: after", again  # the session was released


def test_the_progress_cancel_button_stops_a_turn_hung_in_a_tool(server: RawServer, work: Path, marker: str) -> None:
    """A client showing the turn's progress with its cancel button (`cancellable`) sends
    `window/workDoneProgress/cancel` for the token: the turn stops as on `$/cancelRequest`, and the request is
    answered with the cancelled turn (before, the notification was taken by pygls alone and the turn ran on)."""
    first = server.call("sessions/runTurn", {"prompt": "hello", "cwd": str(work), "provider": "anthropic"})["result"]
    path = Path(first["path"])
    msg_id = start_hung_turn(server, work, marker, 0, sessionId=first["sessionId"])
    server.notify("window/workDoneProgress/cancel", {"token": "progress-0"})
    reply = server.answer(msg_id, timeout=LIVENESS)
    assert reply.get("result", {}).get("cancelled") is True, reply
    assert wait_gone(marker, LIVENESS) is not None, "the hung command outlived the cancelled turn"
    assert_interrupted_in_tool(path)


def test_a_progress_token_in_use_is_refused(server: RawServer, work: Path, marker: str) -> None:
    """A second turn given the token of a running one (LSP wants it unique) is refused, naming the field: before, it
    took the token over, the first turn's end dropped it, and the second turn's cancel button stopped nothing."""
    msg_id = start_hung_turn(server, work, marker, 0)
    again = server.call(
        "sessions/runTurn",
        {"prompt": "two", "cwd": str(work), "provider": "anthropic", "workDoneToken": "progress-0"},
        timeout=LIVENESS,
    )
    assert again.get("error", {}).get("code") == INVALID_PARAMS and "workDoneToken" in again["error"]["message"], again
    server.notify("window/workDoneProgress/cancel", {"token": "progress-0"})  # still the first turn's
    assert server.answer(msg_id, timeout=LIVENESS).get("result", {}).get("cancelled") is True
    assert wait_gone(marker, LIVENESS) is not None


def test_five_cancelled_hung_turns_then_a_turn_is_served(server: RawServer, work: Path, marker: str) -> None:
    """More cancelled hung turns than the bound of running turns: had any kept its place, the
    last ones (or the next turn) would be refused as busy."""
    times = []
    for n in range(5):
        msg_id = start_hung_turn(server, work, marker, n)
        reply, answered = cancel(server, msg_id)
        assert reply.get("error", {}).get("code") == REQUEST_CANCELLED, reply
        times.append(answered)
    assert wait_gone(marker, LIVENESS) is not None, f"hung commands left: {commands_with(marker)}"
    served = server.call("sessions/runTurn", {"prompt": "still here", "cwd": str(work), "provider": "anthropic"})
    assert served.get("result", {}).get("text") == "echo: still here", served
    print("5 hung turns cancelled, answered after " + ", ".join(f"{t:.2f}" for t in times) + " s; then served")


def test_turns_beyond_the_bound_are_refused_busy(server: RawServer, work: Path, marker: str) -> None:
    ids = [start_hung_turn(server, work, marker, n) for n in range(4)]
    began = time.monotonic()
    refused = server.call(
        "sessions/runTurn", {"prompt": "a fifth", "cwd": str(work), "provider": "anthropic"}, timeout=LIVENESS
    )
    took = time.monotonic() - began
    err = refused.get("error")
    assert err is not None, f"a fifth turn ran beside 4 hung ones: {refused}"
    assert err["code"] == REQUEST_FAILED and err["data"]["reason"] == "busy", err
    print(f"the fifth turn was refused as busy after {took:.2f} s: {err['message']}")
    for msg_id in ids:
        reply, _ = cancel(server, msg_id)
        assert "error" in reply
    served = server.call("sessions/runTurn", {"prompt": "room again", "cwd": str(work), "provider": "anthropic"})
    assert served.get("result", {}).get("text") == "echo: room again", served


def test_exit_ends_the_server_with_a_turn_hung(server: RawServer, work: Path, marker: str, projects: Path) -> None:
    start_hung_turn(server, work, marker, 0)
    began = time.monotonic()
    assert server.call("shutdown", timeout=LIVENESS).get("result", "x") is None
    server.notify("exit")
    rc, _ = server.wait_exit(LIVENESS)
    took = time.monotonic() - began
    assert rc is not None, "the server is still running after shutdown + exit"
    assert rc == 0, (rc, server.stderr[-1500:])
    gone = wait_gone(marker, LIVENESS)
    assert gone is not None, "the hung command outlived the server"
    (path,) = [p for p in projects.rglob("*.jsonl")]
    print(f"shutdown + exit: status {rc} after {took:.2f} s; the command gone {gone:.2f} s later")
    assert_interrupted_in_tool(path)


def stop_hung_turn(projects: Path, work: Path, marker: str, sig: signal.Signals) -> tuple[str, Path]:
    """A `turn` hung in a Bash call, stopped by `sig`: it ends with status 128 + `sig` and the command with it;
    (the session id, its file)."""
    sid, path = new_session(projects, work)
    turn = TurnProcess(projects, work, hung(marker), "--resume", sid, "--allow", "Bash")
    try:
        turn.wait_tool()
        deadline = time.monotonic() + LIVENESS
        while not commands_with(marker):
            assert time.monotonic() < deadline, "the hung command never started"
            time.sleep(0.05)
        turn.proc.send_signal(sig)
        rc, took = turn.wait(LIVENESS)
        assert rc is not None, f"`session-lsp turn` still runs {LIVENESS} s after {sig.name}"
        gone = wait_gone(marker, LIVENESS)
        assert gone is not None, "the hung command outlived the turn"
        print(f"{sig.name}: `turn` ended with status {rc} after {took:.2f} s; the command gone {gone:.2f} s later")
        assert rc == 128 + sig, (rc, turn.stderr[-1500:])
        assert b"(cancelled)" in turn.stderr
    finally:
        turn.kill()
    return sid, path


def test_ctrl_c_ends_a_turn_command_hung_in_a_tool(projects: Path, work: Path, marker: str) -> None:
    _, path = stop_hung_turn(projects, work, marker, signal.SIGINT)
    assert_interrupted_in_tool(path)


@pytest.mark.parametrize("how", ["stdin closed", "SIGTERM", "SIGINT"])
def test_client_gone_ends_the_server_and_its_commands(
    server: RawServer, work: Path, marker: str, projects: Path, how: str
) -> None:
    """The editor crashed (its end of the pipe closed), stopped the server with SIGTERM, or the
    person pressed Ctrl-C, with a turn hung in a tool: the server ends, the command it started
    does not outlive it, and the interruption is recorded."""
    start_hung_turn(server, work, marker, 0)
    began = time.monotonic()
    if how == "stdin closed":
        assert server.proc.stdin is not None
        server.proc.stdin.close()
    else:
        server.proc.send_signal(signal.SIGTERM if how == "SIGTERM" else signal.SIGINT)
    rc, _ = server.wait_exit(LIVENESS)
    took = time.monotonic() - began
    assert rc is not None, f"the server still runs {LIVENESS} s after its client went ({how})"
    gone = wait_gone(marker, LIVENESS)
    assert gone is not None, f"`sleep 600` outlived the server ({how})"
    print(f"{how}: the server ended with status {rc} after {took:.2f} s; the command gone {gone:.2f} s later")
    (path,) = list(projects.rglob("*.jsonl"))
    assert_interrupted_in_tool(path)


def test_exit_during_the_first_index_ends_its_worker_processes(tmp_path: Path) -> None:
    """The first index reads a cold folder on forked worker processes; `exit` while they work ends them too, and
    the client sees the end of the server's output (no worker holds its pipes)."""
    import os

    from bench.make_projects import make_projects

    folder = make_projects(tmp_path / "big", total_mb=40, seed=3)
    an_hour_ago = time.time() - 3600
    for p in folder.rglob("*"):  # settled: the first index reads only such files on workers
        os.utime(p, (an_hour_ago, an_hour_ago))
    with RawServer() as server:
        server.initialize(folder, watch=False)
        deadline = time.monotonic() + LIVENESS
        workers: set[int] = set()
        while not workers:  # the fill has forked its workers
            assert time.monotonic() < deadline, "no worker process was started"
            workers = children(server.proc.pid)
            time.sleep(0.01)
        server.notify("exit")
        rc, _ = server.wait_exit(LIVENESS)
        assert rc is not None
        assert server.proc.stdout is not None
        deadline = time.monotonic() + LIVENESS
        while any(
            Path(f"/proc/{w}").exists() and "Z" not in Path(f"/proc/{w}/stat").read_text().split()[2] for w in workers
        ):
            assert time.monotonic() < deadline, f"worker processes {sorted(workers)} outlived the server"
            time.sleep(0.05)
        print(f"{len(workers)} workers ended with the server")
