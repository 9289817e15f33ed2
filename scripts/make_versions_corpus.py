"""Write tests/corpus/versions: sessions written by older Claude Code CLIs, resumed by CLI 2.1.328.

Each old CLI (0.2.x to 2.1.0, a ``cli.js`` run by Node, installed by
``scripts/install-old-clis.sh`` under ``.cache/claude-cli-<version>`` or ``$SLSP_OLD_CLI_DIR``) runs in print mode,
offline, against the scripted test model (tests/scripted_api.py), in a working directory
under /tmp/slsp-versions (wiped first, so paths are reproducible). Its ``projects/`` folder is
copied as it left it. Then every session file is resumed by the real CLI 2.1.328 with
``ORACLE <id>``, each from a fresh copy of that folder (so every resume sees the old writer's file,
untouched), and the request it sent is recorded. A third part, ``models/``, holds small files whose
replies name different models, resumed the same way: which model 2.1.328 continues with, and what
that does to the conversation. Run: ``.venv/bin/python scripts/make_versions_corpus.py`` (everything, anew),
or ``... make_versions_corpus.py --add VERSION...`` to add writers to the committed corpus, keeping what it holds
(requests are appended, so the indexes of the committed oracles stay valid).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

import scripted_api  # noqa: E402
from realcli import find_claude, run_claude  # noqa: E402
from scripted_api import ScriptedModelServer  # noqa: E402

BASE = Path("/tmp/slsp-versions")
OUT = REPO / "tests" / "corpus" / "versions"
OLD_VERSIONS = ("0.2.109", "1.0.0", "1.0.51", "1.0.128", "2.0.0", "2.0.77", "2.1.0")
"""The writers, oldest first: 0.2.109 is the oldest that writes JSONL transcripts (see the README)."""
SYSTEM = "Scripted test model. Be brief."
RESUME_FLAGS = ["--system-prompt", SYSTEM, "--tools", "Read,Agent"]
SCRUB_REMINDER = "<system-reminder>[scrubbed]"
SCRUB_SYSTEM = "[scrubbed system text]"
MODELS = (
    "claude-sonnet-4-20250514",
    "claude-opus-4-20250514",
    "claude-opus-4-1-20250805",
    "claude-3-5-haiku-20241022",
    "claude-3-7-sonnet-20250219",
    "claude-3-haiku-20240307",
    "claude-3-5-sonnet-20241022",
    "claude-sonnet-4-5-20250929",
    "claude-haiku-4-5-20251001",
    "claude-opus-4-5-20251101",
    "claude-opus-4-7",
    "claude-opus-4-8",
    "claude-opus-4-8[1m]",
    "claude-sonnet-5",
    "claude-opus-5-5",
    "claude-fable-5-2",
    "claude-mythos-5",
    "some-unknown-model",
    "<synthetic>",
    "claude-sonnet-4-5-20250929,<synthetic>",
    "claude-sonnet-4-5-20250929,some-unknown-model",
    "claude-sonnet-4-5-20250929,meta:claude-opus-5",
)
"""Each entry: the models of the file's replies in order (``meta:`` marks an ``isMeta`` reply)."""


def old_cli(version: str) -> Path:
    """The version's ``cli.js``: under ``$SLSP_OLD_CLI_DIR`` when set, else under the repo's ``.cache``."""
    root = Path(os.environ.get("SLSP_OLD_CLI_DIR") or REPO / ".cache")
    return root / f"claude-cli-{version}" / "node_modules" / "@anthropic-ai" / "claude-code" / "cli.js"


def cli_knows(version: str, word: str) -> bool:
    """Whether the version's bundle holds ``word`` (an option or a tool name): what it can be asked to do."""
    return word in old_cli(version).read_text(encoding="utf-8", errors="replace")


def first_session_id(projects: Path, sid: str) -> str:
    """The sessionId of the first row of session ``sid``'s file that has one."""
    (path,) = projects.glob(f"*/{sid}.jsonl")
    with path.open(encoding="utf-8") as f:
        return next(str(row["sessionId"]) for row in map(json.loads, f) if row.get("sessionId"))


def session_files(projects: Path) -> dict[Path, tuple[int, int]]:
    """Session files (not agent files) with their size and mtime."""
    out = {}
    for path in projects.glob("*/*.jsonl"):
        if not path.name.startswith("agent-"):
            st = path.stat()
            out[path] = (st.st_size, st.st_mtime_ns)
    return out


def session_id(version: str, n: int) -> str:
    major, minor, _ = version.split(".")
    return f"{major}{minor}{n:06d}-0000-4000-8000-{version.replace('.', ''):0>12}"


# -- the scripted model: TASK <prompt> starts a subagent through the pre-2.1 `Task` tool ---------

_plain_plan = scripted_api.plan_reply


def _plan_with_task(messages: list[Any]) -> tuple[str, list[dict[str, Any]]]:
    kind, blocks = _plain_plan(messages)
    text = blocks[0].get("text", "") if len(blocks) == 1 and blocks[0].get("type") == "text" else ""
    if text.startswith("echo: CALL "):  # CALL <tool> <json input>: one call of any tool
        name, _, raw = text.removeprefix("echo: CALL ").partition(" ")
        return "normal", [{"type": "tool_use", "id": "", "name": name, "input": json.loads(raw)}]
    if text.startswith("echo: TASK "):
        prompt = text.removeprefix("echo: TASK ")
        task = {"description": "sub task", "prompt": prompt, "subagent_type": "general-purpose"}
        return "normal", [{"type": "tool_use", "id": "", "name": "Task", "input": task}]
    return kind, blocks


_plain_build = ScriptedModelServer.build_message
LIMIT_TOKENS = 195_000
"""The input tokens a reply to `BIG <words>` reports: past every CLI's auto-compact threshold (200k context)."""


def _build_with_big_usage(
    self: ScriptedModelServer, body: dict[str, Any], blocks: list[dict[str, Any]]
) -> dict[str, Any]:
    message = _plain_build(self, body, blocks)
    if any(str(b.get("text", "")).startswith("echo: BIG ") for b in blocks):
        message["usage"]["input_tokens"] = LIMIT_TOKENS
    return message


# -- condensed requests --------------------------------------------------------------------------


def condense_block(block: Any) -> dict[str, Any]:
    """Texts in full (system reminders scrubbed), tool calls by id and name, results by id and text."""
    if isinstance(block, str):
        block = {"type": "text", "text": block}
    kind = block.get("type")
    if kind == "text":
        text = str(block.get("text", ""))
        return {"type": "text", "text": SCRUB_REMINDER if text.lstrip().startswith("<system-reminder>") else text}
    if kind == "tool_use":
        return {"type": "tool_use", "id": block.get("id"), "name": block.get("name")}
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            content = [condense_block(b) for b in content]
        elif isinstance(content, str) and content.lstrip().startswith("<system-reminder>"):
            content = SCRUB_REMINDER
        return {"type": "tool_result", "tool_use_id": block.get("tool_use_id"), "content": content}
    return {"type": kind}


def condense(request: dict[str, Any], cli: str) -> dict[str, Any]:
    messages = []
    for message in request.get("messages") or []:
        content = message.get("content")
        blocks = [content] if isinstance(content, str) and content else list(content or [])
        if message.get("role") == "system":
            condensed = [{"type": "text", "text": SCRUB_SYSTEM}] if blocks else []
        else:
            condensed = [condense_block(b) for b in blocks]
        messages.append({"role": message.get("role"), "content": condensed})
    return {"cli": cli, "sessionId": request["sessionId"], "model": request.get("model"), "messages": messages}


TEXT_CUT = 500
"""Texts longer than this are cut to it (tests/oracle.py accepts a longer text of ours that starts with it)."""


def _cut_texts(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def cut(block: dict[str, Any]) -> dict[str, Any]:
        text = block.get("text")
        return {**block, "text": text[:TEXT_CUT]} if isinstance(text, str) and len(text) > TEXT_CUT else block

    return [{**m, "content": [cut(b) for b in m["content"]]} for m in messages]


def shorten(request: dict[str, Any]) -> dict[str, Any]:
    """Texts cut at TEXT_CUT; an old CLI's own request keeps only its last message (what that step sent anew).
    2.1.328's requests, the oracles, keep every message. Shortening twice changes nothing."""
    messages = _cut_texts(request["messages"])
    if request["cli"] == "2.1.328" or "earlierMessages" in request:
        return {**request, "messages": messages}
    return {**request, "messages": messages[-1:], "earlierMessages": len(messages) - 1}


# -- driving the CLIs ----------------------------------------------------------------------------


def working_folder(root: Path) -> tuple[Path, Path, Path, Path]:
    """A version's working folder under `root`, with the two files its turns read (note, plan), and its config
    home: (work, note, plan, config)."""
    work = root / "work"
    work.mkdir(parents=True)
    note, plan = work / "note.txt", work / "plan.txt"
    note.write_text("a note\n", encoding="utf-8")
    plan.write_text("step one\nstep two\n", encoding="utf-8")
    return work, note, plan, root / "config"


class Driver:
    """Runs CLI steps and logs each, with the requests it made, to steps.log."""

    def __init__(self, model: ScriptedModelServer, kept: dict[str, Any] | None = None) -> None:
        kept = kept or {}
        self.model = model
        self.log: list[str] = kept.get("log", [])
        self.requests: list[dict[str, Any]] = kept.get("requests", [])
        self.oracles: dict[str, dict[str, Any]] = kept.get("oracles", {})
        self.models: list[dict[str, Any]] = kept.get("models", [])

    def _collect(self, first: int, cli: str) -> tuple[int, int]:
        start = len(self.requests)
        self.requests += [shorten(condense(r, cli)) for r in self.model.requests[first:]]
        return start, len(self.requests) - 1

    def step(
        self,
        version: str,
        cwd: Path,
        config: Path,
        prompt: str,
        *args: str,
        flags: list[str] | None = None,
        check: bool = True,
    ) -> tuple[int, str, str]:
        first = len(self.model.requests)
        claude = None if version == "2.1.328" else old_cli(version)
        allowed = ("Read", "Agent") if claude is None else ("Read", "Task", "KillBash", "KillShell")
        done = run_claude(
            [prompt, *args, *(flags or [])],
            cwd=cwd,
            config_dir=config,
            base_url=self.model.base_url,
            home=BASE / "home",
            timeout=180,
            claude=claude,
            allowed_tools=allowed,
        )
        lo, hi = self._collect(first, version)
        self.log.append(f"== {version} cwd={cwd} -p {' '.join([prompt, *args])}")
        self.log.append(done.stdout.rstrip("\n"))
        if done.stderr.strip():
            self.log.append("stderr: " + done.stderr.strip())
        self.log.append(f"rc={done.returncode} requests={lo}..{hi}")
        if check and done.returncode != 0:
            raise SystemExit("\n".join(self.log))
        return lo, done.stdout, done.stderr

    def write_sessions(self, version: str) -> Path:
        """The old CLI's sessions: turns, tool calls, a subagent, a compaction, resumes, a fork."""
        work, note, plan, config = working_folder(BASE / version)
        projects = config / "projects"
        named = cli_knows(version, "--session-id")

        def run(n: int, prompt: str, *args: str) -> str:
            """One step; returns the id of the session file it wrote (CLIs before 1.0.x resume into a new one)."""
            before = session_files(projects)
            ids = ["--session-id", session_id(version, n)] if named and not args else []
            _, _, err = self.step(version, work, config, prompt, *args, *ids, check=False)
            if "No conversation found" in err and args[:1] == ("--resume",):
                # 0.2.x finds a session by its first row's sessionId, which a resumed copy keeps
                first = first_session_id(projects, args[1])
                self.step(version, work, config, prompt, "--resume", first, *args[2:])
            elif not self.log[-1].startswith("rc=0 "):
                raise SystemExit("\n".join(self.log))
            after = session_files(projects)
            written = [p for p, stamp in after.items() if before.get(p) != stamp]
            if not written:
                raise SystemExit("\n".join([*self.log, f"{version}: {prompt!r} wrote no session file"]))
            sid = max(written, key=lambda p: after[p][1]).stem
            self.log.append(f"wrote {sid}")
            return sid

        # s1: a plain turn, a tool call, a subagent, a compaction, a turn after it
        s1 = run(1, "hello")
        s1 = run(1, f"READ {note}", "--resume", s1)
        s1 = run(1, f"TASK READ {plan}", "--resume", s1)
        s1 = run(1, "/compact", "--resume", s1)
        compacted = run(1, "after the compact", "--resume", s1)
        # s2: parallel calls, then two plain turns
        s2 = run(2, f"PAR {note} {plan}")
        s2 = run(2, "a plain question", "--resume", s2)
        run(2, "another one", "--resume", s2)
        # s3: ends right after a subagent's answer
        s3 = run(3, "start")
        run(3, f"TASK READ {note}", "--resume", s3)
        # s4: a call of the tool that stops a background shell (renamed TaskStop in 2.1's table)
        # 1.0.128's committed session calls `KillBash`, a name it has no tool for (its tool is `KillShell`)
        kill = "KillBash" if version == "1.0.128" else "KillShell" if cli_knows(version, '"KillShell"') else None
        if kill:
            run(4, f'CALL {kill} {{"shell_id": "no-such-shell"}}')
        # s6: a long session past its limit: the reply to BIG reports 195k input tokens, so the next turn
        # compacts first (before 1.0.128 only in memory: the file keeps every row)
        s6 = run(6, "hi")
        s6 = run(6, "BIG turn", "--resume", s6)
        run(6, "after the limit", "--resume", s6)
        # a fork of the compacted session, where the CLI has --fork-session
        if cli_knows(version, "--fork-session"):
            run(5, "a forked turn", "--resume", compacted, "--fork-session")
        return projects

    def resume_all(self, version: str, projects: Path) -> None:
        """Resume every session file with CLI 2.1.328, each from a fresh copy of the old folder."""
        for path in sorted(projects.glob("*/*.jsonl")):
            if path.name.startswith("agent-"):
                continue
            sid = path.stem
            config = BASE / "resume" / version / sid
            shutil.copytree(projects, config / "projects")
            cwd = BASE / version / "work"
            lo, out, err = self.step(
                "2.1.328", cwd, config, f"ORACLE {sid}", "--resume", sid, flags=RESUME_FLAGS, check=False
            )
            mine = [i for i in range(lo, len(self.requests)) if self._asks_oracle(self.requests[i], sid)]
            rel = f"claude-code-{version}/projects/{path.relative_to(projects).as_posix()}"
            self.oracles[rel] = {
                "sessionId": sid,
                "writer": version,
                "cwd": str(cwd),
                "request": mine[0] if mine else None,
                "stdout": out.strip()[:300],
                "stderr": err.strip()[:300],
            }

    @staticmethod
    def _asks_oracle(request: dict[str, Any], sid: str) -> bool:
        return request["cli"] == "2.1.328" and any(
            b.get("text", "").strip() == f"ORACLE {sid}"
            for m in request["messages"]
            if m["role"] == "user"
            for b in m["content"]
        )

    def model_files(self) -> None:
        """Small files whose replies name different models, each resumed by CLI 2.1.328."""
        cwd = BASE / "models-work"
        cwd.mkdir(parents=True)
        folder = "-tmp-slsp-versions-models-work"
        for n, spec in enumerate(MODELS, start=1):
            sid = f"70000000-0000-4000-8000-{n:012d}"
            config = BASE / "models" / sid
            path = config / "projects" / folder / f"{sid}.jsonl"
            path.parent.mkdir(parents=True)
            path.write_text("".join(json.dumps(r) + "\n" for r in model_rows(sid, cwd, spec)), encoding="utf-8")
            target = OUT / "models" / "projects" / folder
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target / path.name)  # as written, before the resume appends to it
            lo, out, err = self.step("2.1.328", cwd, config, f"ORACLE {sid}", "--resume", sid, flags=RESUME_FLAGS)
            request = next(i for i in range(lo, len(self.requests)) if self._asks_oracle(self.requests[i], sid))
            self.models.append(
                {
                    "path": f"models/projects/{folder}/{sid}.jsonl",
                    "sessionId": sid,
                    "replies": spec.split(","),
                    "request": request,
                    "continuedWith": self.requests[request]["model"],
                    "stderr": err.strip()[:300],
                }
            )


def model_rows(sid: str, cwd: Path, spec: str) -> list[dict[str, Any]]:
    """A prompt, a system-role `date` attachment and a reply per model in `spec`."""
    rows: list[dict[str, Any]] = []
    parent = None
    common = {"isSidechain": False, "userType": "external", "cwd": str(cwd), "sessionId": sid, "version": "2.1.328"}
    for k, reply in enumerate(spec.split(",")):
        meta = reply.startswith("meta:")
        model = reply.removeprefix("meta:")
        ids = [f"{sid[:8]}-{k:04d}-4000-8000-{i:012d}" for i in range(3)]
        stamp = f"2026-11-29T10:{k:02d}:0"
        rows.append(
            {
                "parentUuid": parent,
                **common,
                "type": "user",
                "uuid": ids[0],
                "timestamp": stamp + "0.000Z",
                "message": {"role": "user", "content": f"prompt {k}"},
            }
        )
        rows.append(
            {
                "parentUuid": ids[0],
                **common,
                "type": "attachment",
                "uuid": ids[1],
                "timestamp": stamp + "0.100Z",
                "attachment": {"type": "date", "date": "2026-11-29"},
                "rendered": [{"content": "<system-reminder>\nToday's date is 2026-11-29.\n</system-reminder>"}],
                "renderedRole": "system",
            }
        )
        rows.append(
            {
                "parentUuid": ids[1],
                **common,
                "type": "assistant",
                "uuid": ids[2],
                "timestamp": stamp + "1.000Z",
                **({"isMeta": True} if meta else {}),
                "message": {
                    "id": f"msg_{sid[:8]}_{k}",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [{"type": "text", "text": f"reply {k}"}],
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": 1, "output_tokens": 1},
                },
            }
        )
        parent = ids[2]
    return rows


def write_readme(d: Driver) -> None:
    files = sorted(p.relative_to(OUT).as_posix() for p in OUT.glob("claude-code-*/projects/**/*.jsonl"))
    size = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file())
    lines = [
        "# Sessions written by older Claude Code CLIs, resumed by CLI 2.1.328",
        "",
        "Made by `scripts/make_versions_corpus.py` (rerun it to regenerate; it needs Node, the old CLIs",
        "from `scripts/install-old-clis.sh` and the real CLI 2.1.328). Every CLI ran in print mode",
        "(`-p`), offline, against the scripted test model `tests/scripted_api.py`, with",
        "`CLAUDE_CONFIG_DIR` and `HOME` under `/tmp/slsp-versions`; the script adds two words to the",
        "scripted model: `TASK <prompt>` answers with one `Task` tool call (the subagent tool before 2.1),",
        "`CALL <tool> <json>` with one call of that tool.",
        "",
        f"Writers: {', '.join(f'`@anthropic-ai/claude-code@{v}`' for v in OLD_VERSIONS)} (`cli.js` run by",
        "Node 20 as root, `--allowedTools Read,Task,KillBash,KillShell`, default system prompt and tools). In",
        "each, working directory `/tmp/slsp-versions/<version>/work`:",
        "- session 1: `hello`, `READ note.txt`, `TASK READ plan.txt` (a subagent), `/compact`,",
        "  `after the compact`, each step after the first a `--resume` of the step before;",
        "- session 2: `PAR note.txt plan.txt` (two parallel calls), two plain prompts;",
        "- session 3: `start`, then `TASK READ note.txt` (the file ends after the subagent);",
        "- session 4: one call of `KillShell` (2.0.x, 2.1.0; 1.0.128 has it too) with a shell id that does not",
        "  exist (an error result), or of `KillBash` in 1.0.128's, a name that CLI has no tool for (it answered",
        "  with an error result too): 2.1.328 sends `Task` as `Agent` but keeps these names;",
        "- session 6 (not in 1.0.128's and 2.0.77's): `hi`, `BIG turn` (whose reply reports 195,000 input tokens),",
        "  `after the limit` (the CLI compacts before it: a long session past its limit);",
        "  0.2.109, 1.0.0 and 1.0.51 compact (`/compact` and past the limit: a summary request, then the summary",
        "  sent) but write no summary or boundary row, so 2.1.328 resumes their whole chain; from 1.0.128 on the",
        "  file holds `/compact`'s boundary, and 2.0.0's and 2.1.0's the one past the limit (`trigger: auto`);",
        "- where the CLI has `--fork-session` (2.0.0 on): `a forked turn`, `--resume` of session 1 with it.",
        "",
        "Where the CLI has `--session-id` (1.0.128, 2.0.x, 2.1.0) sessions have made-up ids (`10000001-…`);",
        "before, each resume of 0.2.109, 1.0.0 and 1.0.51 wrote a new file holding a copy of the conversation",
        "(0.2.109 keeps the copied rows' `sessionId` and finds a session by its first row's, so the script resumes",
        "that id when the file's own is refused). `roles.json` names, per writer, the file each scenario's last",
        "step wrote (`compacted`, `parallel`, `subagent-last`, `kill`, `auto-compacted`, `fork`); `steps.log` has",
        "every step.",
        "",
        "What did not make it: 0.2.9, the oldest on the registry, runs under Node 20 (in print mode it shows its",
        "onboarding and stops on raw mode until `~/.claude.json` answers it and approves the key) but has no",
        "`--resume` and writes no transcript; the bundles of 0.2.36, 0.2.50, 0.2.74 and 0.2.90 have no `--resume`",
        "and no JSONL session file, those of 0.2.96 and 0.2.100 `--resume` but no JSONL file; 0.2.109, the next",
        "release, is the oldest that writes `projects/*.jsonl`.",
        "",
        "`claude-code-<version>/projects/` is that CLI's `projects/` folder as it left it: nothing edited.",
        "It also holds what these CLIs leave besides sessions: summary-only `<uuid>.jsonl` files (title",
        "summaries of print-mode runs), inline subagent rows (`isSidechain: true` in the main file) up to",
        "2.0.0; 2.0.x empty `<uuid>.jsonl` files; 2.0.77's and 2.1.0's project-level `agent-<id>.jsonl` files",
        "(the subagent's own, and `Warmup` ones); `costUSD` and `durationMs` on every reply of 0.2.109 and 1.0.0",
        "(1.0.0 writes `costUSD: 0` on the replies a resumed copy repeats).",
        "",
        'Then CLI 2.1.328 (`-p "ORACLE <id>" --resume <id>`, no `--bare`, with',
        f'`--system-prompt "{SYSTEM}" --tools Read,Agent`) resumed each `<uuid>.jsonl` from a fresh copy',
        "of the old folder. `oracles.json` maps each file to the index (0-based line of",
        "`api-requests.jsonl`) of the request that resume sent, or `null` with the CLI's output when it",
        'refused ("No conversation found"). The request is the file\'s conversation followed by the new',
        "prompt; the model it names is the model 2.1.328 continued the session with.",
        "",
        "`models/` holds small files written by the script (a prompt, a system-role `date` attachment",
        "and a reply per listed model), each resumed the same way; `models.json` lists the replies'",
        "models, the request and the model 2.1.328 continued with (and what it printed on stderr).",
        "",
        "`api-requests.jsonl` has every request of every CLI in order (`cli`, `sessionId`, `model`,",
        f"`messages`): texts (cut at {TEXT_CUT} characters), tool calls by id and name, tool results by id and",
        "content; an old CLI's own request keeps only its last message (`earlierMessages` counts the ones left",
        "out). Scrubbed,",
        "as in `tests/corpus/generated`: system reminders (they carry the machine's OS and dates)",
        f"become `{SCRUB_REMINDER}`, system messages `{SCRUB_SYSTEM}` (an empty one stays empty).",
        "`steps.log` lists every command, its output and the requests it made.",
        "",
        f"Session folder files ({len(files)}), total size of this folder about {size // 1024} KiB:",
        *[f"- `{f}`" for f in files],
        "",
    ]
    (OUT / "README.md").write_text("\n".join(lines), encoding="utf-8")


ROLES = {
    "after the compact": "compacted",
    "another one": "parallel",
    "TASK READ {work}/note.txt": "subagent-last",
    "CALL ": "kill",
    "a forked turn": "fork",
    "after the limit": "auto-compacted",
}
"""The step whose session file each role names (the last step of each scenario), by its prompt."""


def roles_from_log(log: list[str]) -> dict[str, dict[str, str]]:
    """writer -> role -> the id of the session file that role's step wrote (from steps.log)."""
    roles: dict[str, dict[str, str]] = {}
    pending: tuple[str, str] | None = None
    for line in log:
        if line.startswith("== ") and not line.startswith("== 2.1.328 "):
            version, rest = line[3:].split(" ", 1)
            command = rest.split(" -p ", 1)[1]
            work = str(BASE / version / "work")
            role = next((r for prompt, r in ROLES.items() if command.startswith(prompt.format(work=work))), None)
            pending = (version, role) if role else None
            words = command.split()
            for flag in ("--session-id", "--resume"):
                if pending and flag in words and "--fork-session" not in words:
                    roles.setdefault(version, {})[role] = words[words.index(flag) + 1]
        elif line.startswith("wrote ") and pending:
            roles.setdefault(pending[0], {})[pending[1]] = line.removeprefix("wrote ")
            pending = None
    return roles


def load_kept() -> dict[str, Any]:
    """What the committed corpus holds, for --add."""
    return {
        "requests": [shorten(json.loads(line)) for line in (OUT / "api-requests.jsonl").open(encoding="utf-8")],
        "log": (OUT / "steps.log").read_text(encoding="utf-8").splitlines(),
        "oracles": json.loads((OUT / "oracles.json").read_text(encoding="utf-8")),
        "models": json.loads((OUT / "models.json").read_text(encoding="utf-8")),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--add", nargs="+", metavar="VERSION", help="add these writers to the committed corpus")
    args = parser.parse_args(argv)
    versions = tuple(args.add or OLD_VERSIONS)
    missing = [v for v in versions if not old_cli(v).is_file()]
    if find_claude() is None or missing or shutil.which("node") is None:
        print(f"NEEDED: node, CLI 2.1.328 and old CLIs {missing}: run scripts/install-old-clis.sh", file=sys.stderr)
        return 1
    if args.add:
        there = [v for v in versions if (OUT / f"claude-code-{v}").exists()]
        if there:
            print(f"already in the corpus: {there}", file=sys.stderr)
            return 1
        kept = load_kept()
        for version in versions:
            shutil.rmtree(BASE / version, ignore_errors=True)
            shutil.rmtree(BASE / "resume" / version, ignore_errors=True)
    else:
        kept = {}
        shutil.rmtree(BASE, ignore_errors=True)
        shutil.rmtree(OUT, ignore_errors=True)
        OUT.mkdir(parents=True)
    scripted_api.plan_reply = _plan_with_task
    ScriptedModelServer.build_message = _build_with_big_usage  # type: ignore[method-assign]
    try:
        with ScriptedModelServer(seed="versions-corpus" + "".join(f"-{v}" for v in args.add or ())) as model:
            d = Driver(model, kept)
            for version in versions:
                projects = d.write_sessions(version)
                shutil.copytree(projects, OUT / f"claude-code-{version}" / "projects")
                d.resume_all(version, OUT / f"claude-code-{version}" / "projects")
            if not args.add:
                d.model_files()
    finally:
        scripted_api.plan_reply = _plain_plan
        ScriptedModelServer.build_message = _plain_build  # type: ignore[method-assign]
    with (OUT / "api-requests.jsonl").open("w", encoding="utf-8") as f:
        for request in d.requests:
            f.write(json.dumps(request, ensure_ascii=False) + "\n")
    (OUT / "steps.log").write_text("\n".join(d.log) + "\n", encoding="utf-8")
    dump = lambda value: json.dumps(value, ensure_ascii=False, indent=2) + "\n"  # noqa: E731
    (OUT / "oracles.json").write_text(dump(dict(sorted(d.oracles.items()))), encoding="utf-8")
    (OUT / "models.json").write_text(dump(d.models), encoding="utf-8")
    (OUT / "roles.json").write_text(dump(roles_from_log(d.log)), encoding="utf-8")
    write_readme(d)
    print(f"wrote {OUT}: {len(d.requests)} requests, {len(d.oracles)} resumed files, {len(d.models)} model files")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
