"""Write tests/corpus/claude-code-2.1.332: sessions the newest CLI wrote, and what it sent resuming them.

CLI 2.1.332 (a native binary, installed by ``scripts/install-old-clis.sh 2.1.332`` under
``.cache/claude-cli-2.1.332`` or ``$SLSP_OLD_CLI_DIR``) runs in print mode, offline, against the scripted test
model (tests/scripted_api.py plus the versions corpus's ``CALL`` and ``BIG`` words), in working directories
under /tmp/slsp-newest (wiped first, so paths are reproducible). It writes sessions of every role the versions
corpus has (a subagent, ``/compact``, parallel calls, past the context limit, ``--fork-session``) and a killed
turn, a rewind (``--resume-session-at``), a named session (``-n``), plus one session session-lsp recorded from
scratch and one 2.1.332 session session-lsp appended turns to. Its ``projects/`` folder is copied as it left it.

Then 2.1.332 resumes, each from a fresh copy of its folder, with ``ORACLE <id>``: every session file it wrote,
the 4 sessions of ``tests/corpus/claude-code-2.1.328`` and every file of ``tests/corpus/versions`` that 2.1.328
resumed. ``oracles.json`` maps each file (relative to tests/corpus) to the request that resume sent.
``--writer 2.1.328`` writes the same sessions with the pinned CLI into /tmp/slsp-newest/2.1.328 only (for a
diff of what the two write; nothing is committed from it).
Run: ``.venv/bin/python scripts/make_newest_corpus.py``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "scripts")]

import make_versions_corpus as mvc  # noqa: E402
import scripted_api  # noqa: E402
from realcli import find_claude, run_claude  # noqa: E402
from scripted_api import ScriptedModelServer  # noqa: E402
from writers.conversations import Script  # noqa: E402

from storage.chain import build_chain  # noqa: E402
from storage.fork import fork_session  # noqa: E402
from storage.recorder import SessionRecorder  # noqa: E402
from storage.transcript import Transcript  # noqa: E402

NEWEST = "2.1.332"
BASE = Path("/tmp/slsp-newest")
CORPUS = REPO / "tests" / "corpus"
OUT = CORPUS / f"claude-code-{NEWEST}"
ALLOWED = ("Read", "Agent")
RENAMED = "my renamed session"
"""The named session's title after its `/rename`; a last resume finds the session by it."""
LIMIT_TOKENS = 990_000
"""What a reply to `BIG <words>` reports here: 195,000 (the versions corpus's) is below the auto-compact threshold of
the 1M-token context both 2.1.328 and 2.1.332 give their default model, so neither compacted."""
KILL_AFTER = 2.5
"""Seconds before the killed turn's CLI gets SIGKILL: its `SLOW` reply streams for 4 s."""


def cli_path(version: str) -> Path:
    if version == "2.1.328":
        found = find_claude()
        assert found is not None
        return found
    root = mvc.old_cli(version).parents[2]  # <root>/claude-cli-<version>/node_modules
    return root / "@anthropic-ai" / "claude-code-linux-x64" / "claude"


def session_id(version: str, n: int) -> str:
    return f"{version.replace('.', '')}{n:03d}-0000-4000-8000-{n:012d}"


class Driver:
    def __init__(self, model: ScriptedModelServer) -> None:
        self.model = model
        self.log: list[str] = []
        self.requests: list[dict[str, Any]] = []
        self.oracles: dict[str, dict[str, Any]] = {}
        self.roles: dict[str, str] = {}
        self.made_dirs: list[Path] = []

    def step(
        self, version: str, cwd: Path, config: Path, prompt: str, *args: str, kill_after: float | None = None
    ) -> tuple[int, str, str, int]:
        first = len(self.model.requests)
        done = run_claude(
            [prompt, *args],
            cwd=cwd,
            config_dir=config,
            base_url=self.model.base_url,
            home=BASE / "home",
            timeout=180,
            kill_after=kill_after,
            claude=cli_path(version),
            allowed_tools=ALLOWED,
        )
        lo = len(self.requests)
        for request in self.model.requests[first:]:
            condensed = mvc.condense(request, version)
            self.requests.append({**condensed, "messages": mvc._cut_texts(condensed["messages"])})
        self.log.append(f"== {version} cwd={cwd} -p {' '.join([prompt, *args])}")
        self.log.append(done.stdout.rstrip("\n"))
        if done.stderr.strip():
            self.log.append("stderr: " + done.stderr.strip())
        self.log.append(f"rc={done.returncode} requests={lo}..{len(self.requests) - 1}")
        return lo, done.stdout, done.stderr, done.returncode

    def write_sessions(self, version: str) -> Path:
        root = BASE / version
        work, note, plan, config = mvc.working_folder(root)
        projects = config / "projects"

        def run(n: int, prompt: str, *args: str, kill_after: float | None = None) -> str:
            sid = session_id(version, n)
            more = ["--resume", sid] if any(projects.glob(f"*/{sid}.jsonl")) else ["--session-id", sid]
            _, _, _, rc = self.step(version, work, config, prompt, *more, *args, kill_after=kill_after)
            if rc != 0 and kill_after is None:
                raise SystemExit("\n".join(self.log))
            return sid

        self.roles["compacted"] = run(1, "hello")
        run(1, f"READ {note}")
        run(1, f"AGENT READ {plan}")
        run(1, "/compact")
        run(1, "after the compact")
        self.roles["parallel"] = run(2, f"PAR {note} {plan}")
        run(2, "a plain question")
        run(2, "another one")
        self.roles["subagent-last"] = run(3, "start")
        run(3, f"AGENT READ {note}")
        self.roles["killed"] = run(4, "hi")
        run(4, "SLOW a slow reply", kill_after=KILL_AFTER)
        self.roles["auto-compacted"] = run(6, "hi")
        run(6, "BIG turn")
        run(6, "after the limit")
        # a rewind: session 7 goes back to its first reply and takes another turn from there
        self.roles["rewound"] = run(7, "first question")
        run(7, "second question")
        (path,) = projects.glob(f"*/{session_id(version, 7)}.jsonl")
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        first_reply = next(r for r in rows if r.get("type") == "assistant")
        run(7, "rewound question", "--resume-session-at", str(first_reply["uuid"]))
        self.roles["named"] = run(8, "a named session", "-n", "my named session")
        run(8, "named again")
        run(8, f"/rename {RENAMED}")
        # a fork of the compacted session
        before = {p.stem for p in projects.glob("*/*.jsonl")}
        self.step(version, work, config, "a forked turn", "--resume", session_id(version, 1), "--fork-session")
        (fork,) = {p.stem for p in projects.glob("*/*.jsonl")} - before
        self.roles["fork"] = fork
        # session-lsp appends to a session the CLI wrote, and records one from scratch
        self.roles["appended"] = run(9, f"READ {note}")
        (path,) = projects.glob(f"*/{session_id(version, 9)}.jsonl")
        rec = SessionRecorder.adopt(path)
        record(rec, work)
        rec.close()
        rec = SessionRecorder.create(projects, str(work), session_id=session_id(version, 10))
        record(rec, work)
        rec.set_title("from scratch")
        rec.close()
        self.roles["ours"] = rec.session_id
        # and forks the appended session, as --fork-session does and at an earlier reply (fresh uuids, forkedFrom)
        (path,) = projects.glob(f"*/{session_id(version, 9)}.jsonl")
        at = [r for r in build_chain(Transcript.load(path)).rows if r.type == "assistant"][-3].uuid
        for n, kind, at_uuid in ((11, "our-fork", None), (12, "our-fork-at", at)):
            sid = session_id(version, n)
            self.roles[kind], _ = fork_session(path, projects, at_uuid=at_uuid, title=kind, session_id=sid)
        return projects

    def resume(self, rel: str, projects: Path, cwd: Path, sid: str, writer: str) -> None:
        """Resume `sid` with the newest CLI from a fresh copy of `projects`; record its request as the oracle."""
        config = BASE / "resume" / rel
        shutil.copytree(projects, config / "projects")
        made = [p for p in (cwd, *cwd.parents) if not p.exists()]
        self.made_dirs += [p for p in made if p not in self.made_dirs]  # the CLI needs the cwd; removed at the end
        cwd.mkdir(parents=True, exist_ok=True)
        lo, out, err, _ = self.step(NEWEST, cwd, config, f"ORACLE {sid}", "--resume", sid, *mvc.RESUME_FLAGS)
        mine = [i for i in range(lo, len(self.requests)) if asks_oracle(self.requests[i], sid)]
        self.oracles[rel] = {
            "sessionId": sid,
            "writer": writer,
            "cwd": str(cwd),
            "request": mine[0] if mine else None,
            "date": datetime.now(UTC).date().isoformat(),
            "stdout": out.strip()[:300],
            "stderr": err.strip()[:300],
        }


def record(rec: SessionRecorder, work: Path) -> None:
    files = [str(work / "note.txt"), str(work / "plan.txt"), str(work / "note.txt")]
    script = Script(rec, files=files)
    for step in [("text", "hello there"), ("tools", 2, [1, 0]), ("agent", f"READ {work / 'plan.txt'}")]:
        script.play(step)
    script.play(("text", "检查审计日志 — done?"))


def asks_oracle(request: dict[str, Any], sid: str) -> bool:
    return request["cli"] == NEWEST and any(
        b.get("text", "").strip() == f"ORACLE {sid}"
        for m in request["messages"]
        if m["role"] == "user"
        for b in m["content"]
    )


README = """# Sessions written by the newest CLI, 2.1.332, and what it sent resuming them

Made by `scripts/make_newest_corpus.py` (it needs CLI 2.1.332 from `scripts/install-old-clis.sh 2.1.332` and the
pinned 2.1.328; rerun it to regenerate). The CLI ran in print mode (`-p`), offline, against the scripted test model
(`tests/scripted_api.py` with the versions corpus's `CALL` and `BIG` words; `BIG` reports 990,000 input tokens),
as root with `--allowedTools Read,Agent`, default system prompt and tools, in `/tmp/slsp-newest/2.1.332/work`.
`projects/` is its `projects/` folder as it left it; `roles.json` names each scenario's session:

- `compacted` (2133200**1**): `hello`, `READ note.txt`, `AGENT READ plan.txt` (a subagent), `/compact`,
  `after the compact`, each a `--resume` of the one before;
- `parallel` (…2): `PAR note.txt plan.txt`, two plain prompts; `subagent-last` (…3): `start`, `AGENT READ note.txt`;
- `killed` (…4): `hi`, then `SLOW a slow reply` killed (SIGKILL) while its reply streamed;
- `auto-compacted` (…6): `hi`, `BIG turn`, `after the limit` (the CLI compacts before it);
- `rewound` (…7): two turns, then `--resume-session-at <uuid of the first reply>` and a third prompt;
- `named` (…8): `-n "my named session"`, a resume, `/rename my renamed session`;
- `fork`: `a forked turn`, `--resume` of …1 `--fork-session`;
- `appended` (…9): one CLI turn (`READ note.txt`), then session-lsp's `SessionRecorder.adopt` recorded a prompt,
  parallel reads, a subagent and a Chinese prompt into it; `ours` (…10): the same recorded from scratch;
  `our-fork`, `our-fork-at`: session-lsp's `fork_session` of …9, whole (same uuids) and at its third-last reply.

Then 2.1.332 (`-p "ORACLE <id>" --resume <id> --system-prompt ... --tools Read,Agent`) resumed, each from a fresh
copy of its folder: every session file here, the 4 of `tests/corpus/claude-code-2.1.328`, the 59 files of
`tests/corpus/versions` 2.1.328 resumed and its 22 model files (97 in all). `oracles.json` maps each file (relative to
`tests/corpus`) to the index (0-based line of `api-requests.jsonl`) of that resume's `ORACLE` request, with the day
it ran (`date`: model retirement in the CLI is by date). `by-title.json`: the session a last
`--resume "my renamed session"` (by title) continued, and its request. `api-requests.jsonl` holds every request in
full, condensed and scrubbed as in `tests/corpus/versions` (texts cut at 500 characters); `steps.log` every command.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writer", default=NEWEST, help="2.1.328: write the same sessions with it, for a diff")
    args = parser.parse_args(argv)
    if not cli_path(NEWEST).is_file() or find_claude() is None:
        print(f"NEEDED: CLI {NEWEST} (scripts/install-old-clis.sh {NEWEST}) and 2.1.328", file=sys.stderr)
        return 1
    shutil.rmtree(BASE / args.writer, ignore_errors=True)
    if args.writer == NEWEST:
        shutil.rmtree(BASE, ignore_errors=True)
        shutil.rmtree(OUT, ignore_errors=True)
    scripted_api.plan_reply = mvc._plan_with_task
    ScriptedModelServer.build_message = mvc._build_with_big_usage  # type: ignore[method-assign]
    mvc.LIMIT_TOKENS = LIMIT_TOKENS
    with ScriptedModelServer(seed=f"newest-corpus-{args.writer}") as model:
        d = Driver(model)
        projects = d.write_sessions(args.writer)
        if args.writer != NEWEST:
            print("\n".join(d.log))
            return 0
        shutil.copytree(projects, OUT / "projects")
        for path in sorted((OUT / "projects").glob("*/*.jsonl")):
            rel = path.relative_to(CORPUS).as_posix()
            d.resume(rel, OUT / "projects", BASE / NEWEST / "work", path.stem, NEWEST)
        config = BASE / "resume" / "by-title"
        shutil.copytree(OUT / "projects", config / "projects")
        lo, _, _, _ = d.step(NEWEST, BASE / NEWEST / "work", config, "BY TITLE", "--resume", RENAMED, *mvc.RESUME_FLAGS)
        by_title = {"title": RENAMED, "request": lo, "sessionId": d.requests[lo]["sessionId"]}
        old = CORPUS / "claude-code-2.1.328" / "projects"
        for path in sorted(old.glob("*/*.jsonl")):
            cwd = Path("/Users/me/other" if "other" in path.parent.name else "/Users/me/shop")
            d.resume(path.relative_to(CORPUS).as_posix(), old, cwd, path.stem, "2.1.328")
        versions = json.loads((CORPUS / "versions" / "oracles.json").read_text(encoding="utf-8"))
        for rel, info in sorted(versions.items()):
            if info["request"] is None:
                continue
            projects = CORPUS / "versions" / rel.split("/")[0] / "projects"
            d.resume(f"versions/{rel}", projects, Path(info["cwd"]), info["sessionId"], info["writer"])
        for entry in json.loads((CORPUS / "versions" / "models.json").read_text(encoding="utf-8")):
            projects = CORPUS / "versions" / "models" / "projects"
            d.resume(f"versions/{entry['path']}", projects, mvc.BASE / "models-work", entry["sessionId"], "script")
        for made in sorted(d.made_dirs, key=lambda p: len(p.parts), reverse=True):
            made.rmdir()  # e.g. /Users/me/shop: a test expects that cwd of the 2.1.328 corpus to be missing
    dump = lambda value: json.dumps(value, ensure_ascii=False, indent=2) + "\n"  # noqa: E731
    with (OUT / "api-requests.jsonl").open("w", encoding="utf-8") as f:
        for request in d.requests:
            f.write(json.dumps(request, ensure_ascii=False) + "\n")
    (OUT / "steps.log").write_text("\n".join(d.log) + "\n", encoding="utf-8")
    (OUT / "oracles.json").write_text(dump(dict(sorted(d.oracles.items()))), encoding="utf-8")
    (OUT / "roles.json").write_text(dump(d.roles), encoding="utf-8")
    (OUT / "by-title.json").write_text(dump(by_title), encoding="utf-8")
    (OUT / "README.md").write_text(README, encoding="utf-8")
    print(f"wrote {OUT}: {len(d.requests)} requests, {len(d.oracles)} resumed files")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
