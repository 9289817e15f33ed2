"""Crash safety: SIGKILL at random points of a long recording, and concurrent writers."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from storage.reader import read_transcript
from storage.recorder import SessionRecorder
from storage.resume import resume

WRITERS = Path(__file__).parent / "writers"
SID = "c0ffee00-0000-4000-8000-000000000001"
KILLS = 20


def _terminated_lines(path: Path) -> tuple[list[bytes], bytes]:
    data = path.read_bytes()
    *lines, tail = data.split(b"\n")
    return lines, tail


def test_sigkill_at_20_random_points(tmp_path: Path) -> None:
    projects = tmp_path / "config" / "projects"
    rnd = random.Random(20261129)
    durable: set[str] = set()
    torn_after_kill = 0
    sealed_lines = 0
    path: Path | None = None
    for round_ in range(KILLS):
        proc = subprocess.Popen(
            [sys.executable, str(WRITERS / "crash_writer.py"), str(projects), str(tmp_path), SID, str(round_)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"READY\n", proc.stderr.read() if proc.stderr else b""
        time.sleep(rnd.uniform(0.05, 0.8))
        os.kill(proc.pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL, err.decode()
        reported = {line[2:] for line in out.decode().splitlines() if line.startswith("D ")}
        durable |= reported
        path = next(projects.glob(f"*/{SID}.jsonl"))
        lines, tail = _terminated_lines(path)
        torn_after_kill += bool(tail)
        # every terminated line parses, except lines that were torn by an earlier kill and sealed
        bad = []
        seen: set[str] = set()
        for line in lines:
            if not line:
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                bad.append(line)
                continue
            if isinstance(entry.get("uuid"), str):
                seen.add(entry["uuid"])
        assert len(bad) == sealed_lines, f"round {round_}: unparsable whole lines {len(bad)}"
        for agent in path.with_suffix("").glob("subagents/agent-*.jsonl"):
            agent_lines, _ = _terminated_lines(agent)
            for line in agent_lines:
                try:
                    seen.add(json.loads(line)["uuid"])
                except (ValueError, KeyError):
                    pass
        assert durable <= seen, f"round {round_}: {len(durable - seen)} durable rows missing"
        sealed_lines += bool(tail)
    assert path is not None
    # the next append is clean: adopt seals a torn tail and the new rows parse
    rec = SessionRecorder.adopt(path)
    last = rec.record_prompt("after the last crash")
    rec.close()
    result = read_transcript(path)
    assert result.unknown_tail is None and len(result.problems) == sealed_lines
    assert resume(path).messages[-2]["content"][-1]["text"] == "after the last crash"
    assert last in {r.uuid for r in result.rows}
    print(
        f"\ncrash figures: {KILLS} kills, {len(durable)} rows reported durable (all present), "
        f"{torn_after_kill} kills left a torn tail, all sealed on the next append"
    )


def test_two_writer_processes_never_interleave_a_line(tmp_path: Path) -> None:
    target = tmp_path / "shared.jsonl"
    count = 150
    procs = [
        subprocess.Popen([sys.executable, str(WRITERS / "line_writer.py"), str(target), wid, str(count), str(seed)])
        for wid, seed in (("A", 1), ("B", 2))
    ]
    for p in procs:
        assert p.wait(timeout=120) == 0
    data = target.read_bytes()
    assert data.endswith(b"\n")
    seqs: dict[str, list[int]] = {"A": [], "B": []}
    for line in data.split(b"\n")[:-1]:
        entry = json.loads(line)  # an interleaved line would not parse
        assert entry["pad"] == entry["writer"] * len(entry["pad"])
        seqs[entry["writer"]].append(entry["seq"])
    assert seqs == {"A": list(range(count)), "B": list(range(count))}
