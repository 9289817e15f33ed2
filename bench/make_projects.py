"""Generate a real-shaped `~/.claude/projects` folder for benchmarks (healthy, CLI 2.1.328 shapes).

Rows follow the corpus written by the real CLI: queue operations, prompts, attachment chains,
assistant responses split into one row per content block, parallel tool results hanging off their
tool_use rows, subagent files with `.meta.json` sidecars, compactions, rewinds, forks, metadata
re-appended at exit, `progress` rows, a new entry type, killed turns, long lines and one big file.

    from bench.make_projects import make_projects
    projects = make_projects(Path("/tmp/x"), total_mb=300, seed=1)   # -> /tmp/x/projects
"""

from __future__ import annotations

import argparse
import random
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import orjson

VERSION = "2.1.328"
OUT = Path(__file__).resolve().parent / "out"
WORDS = (
    "the function returns a promise and the caller awaits it before reading the config file "
    "cache miss retry later parse tokens häufig élan 项目 测试 ok — done fix the bug in login "
    "export async const let import from return await throw new Error if else for while"
).split()


class Rand:
    """Seeded helpers: ids, text of a given size, sizes from a long-tailed distribution."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)
        pool = " ".join(self.r.choice(WORDS) for _ in range(40000))
        lines = [pool[i : i + 70] for i in range(0, len(pool), 70)]
        self.text_pool = "\n".join(f"{n}\t{ln}" for n, ln in enumerate(lines, 1))

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.r.getrandbits(128), version=4))

    def hex(self, n: int) -> str:
        return f"{self.r.getrandbits(4 * n):0{n}x}"

    def text(self, size: int) -> str:
        size = max(1, min(size, len(self.text_pool) - 1))
        start = self.r.randrange(0, len(self.text_pool) - size)
        out = self.text_pool[start : start + size]
        while size > len(out):
            out += self.text_pool[: size - len(out)]
        return out

    def size(self, median: int, sigma: float = 1.2, cap: int = 2_000_000) -> int:
        return int(min(cap, max(16, self.r.lognormvariate(0, sigma) * median)))


class SessionWriter:
    """Writes one session the way the CLI does: a parent cursor, stamps, whole lines."""

    def __init__(self, rnd: Rand, folder: Path, cwd: str, session_id: str, start: datetime) -> None:
        self.rnd, self.folder, self.cwd, self.sid = rnd, folder, cwd, session_id
        self.path = folder / f"{session_id}.jsonl"
        self.now = start
        self.cursor: str | None = None
        self.lines: list[bytes] = []
        self.size = 0
        self.prompts: list[str | None] = []
        self.uuids: list[str] = []
        self.fork: dict[str, str] | None = None

    def ts(self, step_ms: int = 40) -> str:
        self.now += timedelta(milliseconds=self.rnd.r.randint(1, step_ms))
        return self.now.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"

    def emit(self, entry: dict[str, Any]) -> None:
        line = orjson.dumps(entry) + b"\n"
        self.lines.append(line)
        self.size += len(line)

    def meta(self, etype: str, **fields: Any) -> None:
        self.emit({"type": etype, **fields, "sessionId": self.sid})

    def chain(self, etype: str, body: dict[str, Any], parent: str | None = ..., **extra: Any) -> str:  # type: ignore[assignment]
        uid = self.rnd.uuid()
        entry: dict[str, Any] = {"parentUuid": self.cursor if parent is ... else parent, "isSidechain": False}
        entry.update(body)
        entry.update(type=etype, uuid=uid, timestamp=self.ts(), **extra)
        if self.fork:
            entry["forkedFrom"] = self.fork
        entry.update(
            userType="external", entrypoint="cli", cwd=self.cwd, sessionId=self.sid, version=VERSION, gitBranch="main"
        )
        self.emit(entry)
        self.cursor = uid
        self.uuids.append(uid)
        return uid

    def prompt(self, text: str) -> str:
        self.meta("queue-operation", operation="enqueue", timestamp=self.ts(), content=text)
        self.meta("queue-operation", operation="dequeue", timestamp=self.ts())
        self.prompts.append(self.cursor)
        uid = self.chain(
            "user",
            {"promptId": self.rnd.uuid(), "message": {"role": "user", "content": text}},
            permissionMode="default",
        )
        for _ in range(self.rnd.r.randint(0, 3)):
            self.chain("attachment", {"attachment": {"type": "todo_reminder", "content": [], "itemCount": 0}})
        return uid

    def assistant(self, blocks: list[dict[str, Any]]) -> list[str]:
        mid = "msg_" + self.rnd.hex(24)
        out = []
        for i, block in enumerate(blocks):
            msg = {
                "id": mid,
                "type": "message",
                "role": "assistant",
                "model": "claude-opus-5-5",
                "content": [block],
                "stop_reason": "tool_use" if block["type"] == "tool_use" else "end_turn",
                "usage": {"input_tokens": 100, "output_tokens": 20, "service_tier": "standard"},
            }
            out.append(self.chain("assistant", {"message": msg}, apiBlockIndex=i, requestRef=self.rnd.uuid()))
        return out

    def tool_result(self, use_row: str, tool_id: str, content: str, extra: dict[str, Any]) -> str:
        body = {
            "message": {
                "role": "user",
                "content": [{"tool_use_id": tool_id, "type": "tool_result", "content": content}],
            }
        }
        return self.chain("user", body, parent=use_row, toolUseResult=extra, sourceToolAssistantUUID=use_row)

    def write(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.path, "wb") as fh:
            fh.writelines(self.lines)


def _turn(w: SessionWriter, rnd: Rand, agents: list[tuple[str, str, str]]) -> None:
    r = rnd.r
    prompt = rnd.text(rnd.size(120, 1.0, 4000)).replace("\n", " ")
    w.prompt(prompt)
    for _ in range(r.choice((0, 1, 1, 2, 3, 5))):
        n = r.choice((1, 1, 1, 2, 3))
        agent = r.random() < 0.03
        blocks: list[dict[str, Any]] = []
        if r.random() < 0.5:
            blocks.append({"type": "text", "text": rnd.text(rnd.size(300))})
        ids = []
        for _k in range(n):
            tid = "toolu_" + rnd.hex(20)
            ids.append(tid)
            if agent:
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": tid,
                        "name": "Agent",
                        "input": {"description": "sub task", "prompt": "look", "subagent_type": "general-purpose"},
                    }
                )
            else:
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": tid,
                        "name": "Read",
                        "input": {"file_path": f"{w.cwd}/src/f{r.randint(1, 500)}.ts"},
                    }
                )
        rows = w.assistant(blocks)
        use_rows = rows[-n:]
        if r.random() < 0.1:
            for _ in range(r.randint(1, 3)):
                w.emit(
                    {
                        "parentUuid": use_rows[0],
                        "isSidechain": False,
                        "type": "progress",
                        "data": {"type": "bash_progress", "output": rnd.text(rnd.size(2000, 1.5, 8_000_000))},
                        "toolUseID": ids[0],
                        "parentToolUseID": ids[0],
                        "uuid": rnd.uuid(),
                        "timestamp": w.ts(),
                        "cwd": w.cwd,
                        "sessionId": w.sid,
                        "version": VERSION,
                    }
                )
        last = None
        for row, tid in zip(use_rows, ids):
            if agent:
                aid = "a" + rnd.hex(16)
                agents.append((aid, tid, prompt))
                last = w.tool_result(
                    row,
                    tid,
                    f"Async agent launched. agentId: {aid}",
                    {"isAsync": True, "status": "async_launched", "agentId": aid},
                )
            else:
                content = rnd.text(rnd.size(3000, 1.6))
                last = w.tool_result(row, tid, content, {"type": "text", "file": {"numLines": content.count("\n")}})
        w.cursor = last
    w.assistant([{"type": "text", "text": rnd.text(rnd.size(600))}])
    if r.random() < 0.7:
        w.chain("system", {"subtype": "turn_duration", "durationMs": r.randint(100, 90000), "isMeta": False})
    w.meta("last-prompt", lastPrompt=prompt[:200], leafUuid=w.cursor)
    w.meta("cost-state", totalCostUSD=0.01, totalDuration=r.randint(100, 9000))
    if r.random() < 0.3:
        w.meta("tools-used", tools=["Read"])


def _subagent(rnd: Rand, w: SessionWriter, aid: str, tool_id: str, prompt: str) -> None:
    folder = w.folder / w.sid / "subagents"
    folder.mkdir(parents=True, exist_ok=True)
    sub = SessionWriter(rnd, folder, w.cwd, w.sid, w.now)
    sub.path = folder / f"agent-{aid}.jsonl"
    orig_chain = sub.chain

    def side_chain(etype: str, body: dict[str, Any], parent: Any = ..., **extra: Any) -> str:
        uid = orig_chain(etype, body, parent, **extra)
        entry = orjson.loads(sub.lines[-1])
        entry["isSidechain"] = True
        entry["agentId"] = aid
        sub.size -= len(sub.lines[-1])
        sub.lines[-1] = orjson.dumps(entry) + b"\n"
        sub.size += len(sub.lines[-1])
        return uid

    sub.chain = side_chain  # type: ignore[method-assign]
    sub.chain("user", {"message": {"role": "user", "content": prompt}})
    for _ in range(rnd.r.randint(1, 4)):
        tid = "toolu_" + rnd.hex(20)
        (row,) = sub.assistant([{"type": "tool_use", "id": tid, "name": "Read", "input": {"file_path": "x"}}])
        sub.tool_result(row, tid, rnd.text(rnd.size(2000)), {"type": "text"})
    sub.assistant([{"type": "text", "text": "done"}])
    sub.write()
    meta = {"agentType": "general-purpose", "description": "sub task", "toolUseId": tool_id}
    (folder / f"agent-{aid}.meta.json").write_bytes(orjson.dumps(meta))


def make_session(
    rnd: Rand,
    folder: Path,
    cwd: str,
    target: int,
    start: datetime,
    fork_of: SessionWriter | None = None,
    compactions: bool = True,
) -> SessionWriter:
    """One healthy session of about `target` bytes (plus its subagent files); without `compactions`
    its chain runs from the first prompt to the end (the longest resume)."""
    r = rnd.r
    w = SessionWriter(rnd, folder, cwd, rnd.uuid(), start)
    if fork_of is not None and fork_of.uuids:
        w.fork = {"sessionId": fork_of.sid, "messageUuid": r.choice(fork_of.uuids)}
    if r.random() < 0.15:
        w.meta("custom-title", customTitle=rnd.text(30).replace("\n", " "))
    w.meta("mode", mode="normal")
    agents: list[tuple[str, str, str]] = []
    turns = 0
    while w.size < target:
        _turn(w, rnd, agents)
        turns += 1
        x = r.random()
        if x < 0.04 and turns > 2 and compactions:
            logical = w.cursor
            w.chain(
                "system",
                {
                    "subtype": "compact_boundary",
                    "content": "Conversation compacted",
                    "logicalParentUuid": logical,
                    "level": "info",
                    "compactMetadata": {"trigger": "auto", "preTokens": 150000},
                },
                parent=None,
            )
            w.chain(
                "user",
                {"message": {"role": "user", "content": rnd.text(rnd.size(4000))}},
                isCompactSummary=True,
                isVisibleInTranscriptOnly=True,
            )
            w.prompts = [None]
        elif x < 0.08 and len(w.prompts) > 1:
            w.cursor = r.choice(w.prompts[1:])  # a rewind: the next prompt branches off here
        elif x < 0.10:
            w.meta("ai-title", aiTitle=rnd.text(40).replace("\n", " "))
        elif x < 0.11:
            w.meta("summary", summary=rnd.text(60), leafUuid=w.cursor)
        elif x < 0.12:
            w.meta("bridge-status", status="idle")  # an entry type newer than this reader
        elif x < 0.15:
            w.meta(
                "file-history-snapshot",
                messageId=rnd.uuid(),
                snapshot={"trackedFileBackups": {}},
                isSnapshotUpdate=False,
            )
    if r.random() < 0.05:  # a killed turn: a tool call that never got its result
        w.prompt("one more thing")
        tid = "toolu_" + rnd.hex(20)
        w.assistant([{"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": "sleep 100"}}])
    w.write()
    for aid, tid, prompt in agents:
        _subagent(rnd, w, aid, tid, prompt)
    return w


def make_projects(root: Path, total_mb: int, seed: int) -> Path:
    """Write `root/projects` with about `total_mb` MB of healthy sessions; return that folder.

    Sizes are long-tailed (most files small, a few of several MB) and one file holds about a
    quarter of the total, with some lines of several MB, as on a heavy user's machine.
    """
    rnd = Rand(seed)
    projects = Path(root) / "projects"
    projects.mkdir(parents=True, exist_ok=True)
    budget = total_mb * 1024 * 1024
    n_projects = max(2, total_mb // 15)
    folders = []
    for i in range(n_projects):
        cwd = f"/Users/me/code/proj_{i}" + ("/项目" if i % 7 == 3 else "")
        folders.append((projects / "".join(c if c.isascii() and c.isalnum() else "-" for c in cwd), cwd))
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    written = 0
    made: list[SessionWriter] = []
    big = budget // 4
    while written < budget:
        folder, cwd = rnd.r.choice(folders)
        target = big if big else rnd.size(150_000, 1.5, 20_000_000)
        big = 0
        fork = rnd.r.choice(made) if made and rnd.r.random() < 0.04 else None
        start += timedelta(minutes=rnd.r.randint(1, 600))
        w = make_session(rnd, folder, cwd, min(target, budget - written + 1024), start, fork)
        made.append(w)
        written += w.size
        if len(made) > 200:
            made.pop(0)
    return projects


def make_transcript(
    root: Path, total_mb: int, seed: int, *, compactions: bool = False, cwd: str = "/Users/me/code/big"
) -> Path:
    """One session file of about `total_mb` MB under `root/projects`, for a session run in `cwd`."""
    rnd = Rand(seed)
    folder = Path(root) / "projects" / "".join(c if c.isascii() and c.isalnum() else "-" for c in cwd)
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    return make_session(rnd, folder, cwd, total_mb * 1024 * 1024, start, compactions=compactions).path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("root", type=Path)
    p.add_argument("--mb", type=int, default=300)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    print(make_projects(args.root, args.mb, args.seed))


if __name__ == "__main__":
    main()


def add_folder_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every benchmark takes to choose (and make once) its projects folder."""
    parser.add_argument("--mb", type=int, default=300, help="size of the generated folder")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dir", type=Path, default=OUT, help="where generated folders live (git-ignored)")


def projects_for(args: argparse.Namespace) -> Path:
    """`<dir>/mb<N>-seed<S>/projects`, generated on first use and reused after."""
    root = args.dir / f"mb{args.mb}-seed{args.seed}"
    projects = root / "projects"
    if not projects.is_dir():
        t0 = time.perf_counter()
        make_projects(root, args.mb, args.seed)
        print(f"generated {projects} in {time.perf_counter() - t0:.1f} s")
    return projects
