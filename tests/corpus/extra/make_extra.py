"""Write tests/corpus/extra: small real-CLI cases for the API-form rules (see README.md here).

The real Claude Code CLI runs in print mode, offline, against the scripted test model
(tests/scripted_api.py), in working directories under /tmp/slsp-extra (wiped first). The
CLI's ``projects/`` folder is copied byte for byte; every request the CLI made is written to
``api-requests.jsonl`` (full texts, nothing scrubbed, block kinds and ids as sent; text blocks keep
their text, tool_result blocks keep their id and their text content); ``oracles.json`` maps each
session file to its ``ORACLE <id>`` request and to the mode (``bare`` or not) it was resumed in.
Run: ``.venv/bin/python tests/corpus/extra/make_extra.py`` (needs the real CLI).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from realcli import find_claude, run_claude  # noqa: E402

import scripted_api  # noqa: E402
from scripted_api import ScriptedModelServer  # noqa: E402

BASE = Path("/tmp/slsp-extra")
SYSTEM = "Scripted test model. Be brief."
TOOLS = ["--system-prompt", SYSTEM, "--tools", "Read,Glob,Grep"]
BARE = ["--bare", *TOOLS]
E1 = "e1111111-1111-4111-8111-111111111111"  # bare: read, prompt, /compact, prompt
E2 = "e2222222-2222-4222-8222-222222222222"  # full: read, prompt, /compact, prompt
E3 = "e3333333-3333-4333-8333-333333333333"  # bare: killed while Read blocks on a FIFO
E4 = "e4444444-4444-4444-8444-444444444444"  # full: killed while Read blocks on a FIFO
E5 = "e5555555-5555-4555-8555-555555555555"  # bare: killed after a tool result, before the reply
FULL = {E2, E4}
KILLED = (E3, E4, E5)


def _text(block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "text", "text": str(block.get("text", ""))}


def condense_block(block: Any) -> dict[str, Any]:
    if isinstance(block, str):
        return {"type": "text", "text": block}
    kind = block.get("type")
    if kind == "text":
        return _text(block)
    if kind == "tool_use":
        return {"type": "tool_use", "id": block.get("id"), "name": block.get("name")}
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            content = [_text(b) if b.get("type") == "text" else {"type": b.get("type")} for b in content]
        return {"type": "tool_result", "tool_use_id": block.get("tool_use_id"), "content": content}
    return {"type": kind}


def condense(request: dict[str, Any]) -> dict[str, Any]:
    messages = []
    for message in request.get("messages") or []:
        content = message.get("content")
        blocks = [content] if isinstance(content, str) and content else list(content or [])
        messages.append({"role": message.get("role"), "content": [condense_block(b) for b in blocks]})
    return {"path": request["path"], "sessionId": request["sessionId"], "messages": messages}


class Driver:
    def __init__(self, model: ScriptedModelServer) -> None:
        self.model = model
        self.log: list[str] = []
        self.oracles: dict[str, dict[str, Any]] = {}

    def step(
        self, cwd: Path, prompt: str, *args: str, flags: list[str] = BARE, kill_after: float | None = None
    ) -> None:
        first = len(self.model.requests)
        done = run_claude(
            [prompt, *args, *flags],
            cwd=cwd,
            config_dir=BASE / "config",
            base_url=self.model.base_url,
            home=BASE / "home",
            timeout=120,
            kill_after=kill_after,
        )
        shown = " ".join([prompt, *args, *(["--bare"] if "--bare" in flags else [])])
        self.log.append(f"== cwd={cwd} -p {shown}")
        if kill_after is not None:
            self.log.append(f"(SIGKILL after {kill_after} s)")
        self.log.append(done.stdout.rstrip("\n"))
        self.log.append(f"rc={done.returncode} requests={first}..{len(self.model.requests) - 1}")
        if kill_after is None and done.returncode != 0:
            raise SystemExit("\n".join(self.log) + "\n" + done.stderr)

    def oracle(self, session_file: Path) -> None:
        sid = session_file.stem
        rows = [json.loads(line) for line in session_file.read_text(encoding="utf-8").splitlines() if line]
        cwd = next(r["cwd"] for r in rows if r.get("cwd"))
        first = len(self.model.requests)
        bare = sid not in FULL
        self.step(Path(cwd), f"ORACLE {sid}", "--resume", sid, flags=BARE if bare else TOOLS)
        rel = session_file.relative_to(BASE / "config").as_posix()
        self.oracles[rel] = {"request": first, "sessionId": sid, "cwd": cwd, "bare": bare}


def drive(d: Driver) -> None:
    work = BASE / "work"
    work.mkdir(parents=True)
    note = work / "note.txt"
    note.write_text("a note\n", encoding="utf-8")
    fifo = work / "pipe"
    os.mkfifo(fifo)
    for sid, flags in ((E1, BARE), (E2, TOOLS)):
        d.step(work, f"READ {note}", "--session-id", sid, flags=flags)
        d.step(work, "a second prompt", "--resume", sid, flags=flags)
        d.step(work, "/compact", "--resume", sid, flags=flags)
        d.step(work, "after the compact", "--resume", sid, flags=flags)
    for sid, flags in ((E3, BARE), (E4, TOOLS)):
        d.step(work, "before the kill", "--session-id", sid, flags=flags)
        # Read opens the FIFO and blocks (no writer): the CLI is killed while the tool runs.
        d.step(work, f"READ {fifo}", "--resume", sid, flags=flags, kill_after=8)
    d.step(work, "before the kill", "--session-id", E5)
    plain = scripted_api.plan_reply

    def slow_after_results(messages: list[Any]) -> tuple[str, list[dict[str, Any]]]:
        kind, blocks = plain(messages)
        return ("slow" if blocks and blocks[0].get("text", "").startswith("I read it") else kind), blocks

    scripted_api.plan_reply = slow_after_results  # the reply to the tool result streams for 4 s
    try:
        d.step(work, f"READ {note}", "--resume", E5, kill_after=2.5)
    finally:
        scripted_api.plan_reply = plain
    # Each killed session as it was right after the kill, before any resume touched it.
    projects = BASE / "config" / "projects"
    (BASE / "killed").mkdir()
    for sid in KILLED:
        for path in projects.glob(f"*/{sid}.jsonl"):
            shutil.copy2(path, BASE / "killed" / path.name)
    for session_file in sorted(projects.glob("*/*.jsonl")):
        d.oracle(session_file)


def main() -> int:
    if find_claude() is None:
        print("REAL CLI NOT AVAILABLE", file=sys.stderr)
        return 1
    shutil.rmtree(BASE, ignore_errors=True)
    with ScriptedModelServer(seed="extra-corpus") as model:
        driver = Driver(model)
        drive(driver)
        requests = list(model.requests)
    for name in ("projects", "killed", "api-requests.jsonl", "oracles.json", "steps.log"):
        target = HERE / name
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
    shutil.copytree(
        BASE / "config" / "projects", HERE / "projects", ignore=lambda d, names: [n for n in names if n == "memory"]
    )
    shutil.copytree(BASE / "killed", HERE / "killed")
    with (HERE / "api-requests.jsonl").open("w", encoding="utf-8") as f:
        for request in requests:
            f.write(json.dumps(condense(request), ensure_ascii=False) + "\n")
    (HERE / "steps.log").write_text("\n".join(driver.log) + "\n", encoding="utf-8")
    oracles = dict(sorted(driver.oracles.items()))
    (HERE / "oracles.json").write_text(json.dumps(oracles, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {HERE}: {len(requests)} requests, {len(oracles)} sessions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
