"""Write tests/corpus/generated: a real corpus made by the real Claude Code CLI offline.

The CLI runs in print mode against the scripted test model (tests/scripted_api.py) with
working directories under /tmp/slsp-corpus (wiped first, so paths are reproducible). Afterwards the
CLI's own ``projects/`` folder is copied byte for byte; the requests the CLI made are written, in a
condensed form, to ``api-requests.jsonl``; ``steps.log`` lists every command; ``oracles.json`` maps
each session file to the index of its ``ORACLE <id>`` request. Run: ``.venv/bin/python
scripts/make_generated_corpus.py`` (needs the real CLI, see scripts/setup.d/claude-cli.sh).
"""

from __future__ import annotations

import json
import shutil
import sys
import unicodedata
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from realcli import find_claude, run_claude  # noqa: E402
from scripted_api import ScriptedModelServer  # noqa: E402

BASE = Path("/tmp/slsp-corpus")
OUT = REPO / "tests" / "corpus" / "generated"
SYSTEM = "You are driven by a scripted test model for a transcript corpus. Be brief."
TOOLS = ["--system-prompt", SYSTEM, "--tools", "Read,Glob,Grep,Agent"]
BARE = ["--bare", *TOOLS]
S1 = "11111111-1111-4111-8111-111111111111"
S2 = "22222222-2222-4222-8222-222222222222"
S3 = "33333333-3333-4333-8333-333333333333"
S4 = "44444444-4444-4444-8444-444444444444"
S5 = "55555555-5555-4555-8555-555555555555"
S6 = "66666666-6666-4666-8666-666666666666"
TITLE = "revue du café"
# Sessions run without --bare (--bare has no Agent tool and writes fewer attachments).
FULL_SESSIONS = {S2}
SCRUB_REMINDER = "<system-reminder>[scrubbed]"
SCRUB_SYSTEM = "[scrubbed system text]"


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


SHOP = BASE / "shop"
OTHER = BASE / "other"
LONG = BASE / "long" / "/".join(f"a-rather-long-folder-name-number-{i:02d}" for i in range(6))
ZH = BASE / nfc("项目") / nfc("商店")
CAFE = BASE / nfc("café-crème")


def make_tree() -> None:
    shutil.rmtree(BASE, ignore_errors=True)
    files = {
        SHOP / "src/auth/login.ts": "export function login(user: string) {\n  return audit(user);\n}\n",
        SHOP / "src/auth/audit.ts": "export function audit(user: string) {\n  console.log('login', user);\n}\n",
        SHOP / "src/auth/session.ts": "export const TTL = 3600;\n",
        OTHER / "README.md": "# other\n",
        LONG / "notes.txt": "deep notes\n",
        ZH / nfc("说明.md"): "登录失败时写审计日志。\n",
        CAFE / "menu.txt": "crème brûlée\n",
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert len(str(LONG).encode("utf-16-le")) // 2 > 200, "long cwd must exceed 200 UTF-16 units"


def condense_block(block: Any) -> dict[str, Any]:
    """The block as the shared corpus records it: kinds, ids and short texts, reminders scrubbed."""
    if isinstance(block, str):
        block = {"type": "text", "text": block}
    kind = block.get("type")
    if kind == "text":
        text = str(block.get("text", ""))
        return {"type": "text", "text": SCRUB_REMINDER if text.startswith("<system-reminder>") else text[:500]}
    if kind == "tool_use":
        return {"type": "tool_use", "id": block.get("id"), "name": block.get("name")}
    if kind == "tool_result":
        return {"type": "tool_result", "tool_use_id": block.get("tool_use_id")}
    return {"type": kind}


def condense(request: dict[str, Any]) -> dict[str, Any]:
    messages = []
    for message in request.get("messages") or []:
        content = message.get("content")
        blocks = [content] if isinstance(content, str) else list(content or [])
        if message.get("role") == "system":
            condensed = [{"type": "text", "text": SCRUB_SYSTEM}] if blocks else []
        else:
            condensed = [condense_block(b) for b in blocks]
        messages.append({"role": message.get("role"), "content": condensed})
    return {"path": request["path"], "sessionId": request["sessionId"], "messages": messages}


class Driver:
    """Runs CLI steps, logging each to steps.log with the requests it made."""

    def __init__(self, model: ScriptedModelServer) -> None:
        self.model = model
        self.log: list[str] = []
        self.oracles: dict[str, dict[str, Any]] = {}
        self.fork_id = ""

    def step(self, cwd: Path, prompt: str, *args: str, flags: list[str] = BARE, kill_after: float | None = None) -> str:
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
        last = len(self.model.requests) - 1
        shown = " ".join([prompt, *args, *(["--bare"] if "--bare" in flags else [])])
        self.log.append(f"== cwd={cwd} -p {shown}")
        if kill_after is not None:
            self.log.append(f"(SIGKILL after {kill_after} s)")
        self.log.append(done.stdout.rstrip("\n"))
        if done.stderr.strip():
            self.log.append("stderr: " + done.stderr.strip())
        self.log.append(f"rc={done.returncode} requests={first}..{last}")
        if kill_after is None and done.returncode != 0:
            raise SystemExit("\n".join(self.log))
        return done.stdout

    def oracle(self, session_file: Path) -> None:
        sid = session_file.stem
        rows = [json.loads(line) for line in session_file.read_text(encoding="utf-8").splitlines() if line]
        cwd = next(r["cwd"] for r in rows if r.get("cwd"))
        first = len(self.model.requests)
        flags = TOOLS if sid in FULL_SESSIONS else BARE
        self.step(Path(cwd), f"ORACLE {sid}", "--resume", sid, flags=flags)
        request = self.model.requests[first]
        last_user = [m for m in request["messages"] if m["role"] == "user"][-1]
        content = last_user["content"]
        texts = [content] if isinstance(content, str) else [b.get("text") for b in content if b.get("type") == "text"]
        assert texts and texts[-1].strip() == f"ORACLE {sid}", texts
        rel = session_file.relative_to(BASE / "config").as_posix()
        self.oracles[rel] = {"request": first, "sessionId": sid, "cwd": cwd}


def drive(d: Driver) -> None:
    login, audit, sess = (SHOP / "src/auth" / n for n in ("login.ts", "audit.ts", "session.ts"))
    # S2: a subagent that reads a file.
    d.step(SHOP, f"AGENT READ {audit}", "--session-id", S2, flags=TOOLS)
    d.step(SHOP, "after the agent", "--resume", S2, flags=TOOLS)
    # S1: reads, three parallel reads, two compactions, a grep.
    d.step(SHOP, f"READ {login}", "--session-id", S1)
    d.step(SHOP, f"PAR {login} {audit} {sess}", "--resume", S1)
    d.step(SHOP, "/compact", "--resume", S1)
    d.step(SHOP, "after the first compact", "--resume", S1)
    d.step(SHOP, "GREP audit", "--resume", S1)
    d.step(SHOP, "/compact", "--resume", S1)
    d.step(SHOP, "after the second compact", "--resume", S1)
    # A fork of S1, then --continue (picks the fork: the most recently modified file).
    d.step(SHOP, "fork from here", "--resume", S1, "--fork-session")
    d.fork_id = d.model.requests[-1]["sessionId"]
    d.step(SHOP, "continue the latest", "--continue")
    # S3: a retried overload, then a turn killed mid-stream, then a resume.
    d.step(OTHER, "before the kill", "--session-id", S3)
    d.step(OTHER, "FAIL 1", "--resume", S3)
    d.step(OTHER, "SLOW this reply is killed halfway", "--resume", S3, kill_after=2.5)
    d.step(OTHER, "after the kill", "--resume", S3)
    # S4: a working directory longer than 200 UTF-16 units (hashed project folder).
    d.step(LONG, f"READ {LONG / 'notes.txt'}", "--session-id", S4)
    d.step(LONG, "LS .", "--resume", S4)
    d.step(LONG, "GLOB *.txt", "--resume", S4)
    # S5: a Chinese working directory.
    d.step(ZH, "检查登录失败时是否写入审计日志", "--session-id", S5)
    d.step(ZH, f"READ {ZH / nfc('说明.md')}", "--resume", S5)
    # S6: an accented working directory, a -n title, then a resume by that title.
    d.step(CAFE, "bonjour", "--session-id", S6, "-n", TITLE)
    d.step(CAFE, "resumed by title", "--resume", TITLE)
    # Last: every session once more, so each file has an oracle request.
    projects = BASE / "config" / "projects"
    for session_file in sorted(projects.glob("*/*.jsonl")):
        d.oracle(session_file)


def write_readme(d: Driver) -> None:
    projects = OUT / "projects"
    sessions = sorted(p.relative_to(OUT).as_posix() for p in projects.rglob("*.jsonl"))
    size = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file())
    lines = [
        "# A second corpus written by the real Claude Code CLI 2.1.328",
        "",
        "Made by `scripts/make_generated_corpus.py` (rerun it to regenerate; it needs the real CLI,",
        "see `scripts/setup.d/claude-cli.sh`). The CLI ran in print mode (`-p`), fully offline, against the",
        "scripted test model `tests/scripted_api.py` (READ/PAR/AGENT/LS/GLOB/GREP/FAIL/SLOW/echo;",
        "see its docstring) with `CLAUDE_CONFIG_DIR=/tmp/slsp-corpus/config`, `HOME=/tmp/slsp-corpus/home`,",
        "`CLAUDE_CODE_TMPDIR=/tmp/slsp-corpus/tmp` (task output files named in task notifications)",
        "and the flags of `tests/realcli.py` (`--allowedTools Read,LS,Glob,Grep,Agent`, telemetry off).",
        "",
        "`projects/` is that config dir's `projects/` folder, copied byte for byte: nothing was edited",
        "or scrubbed. To keep it small every step ran with",
        f'`--bare --system-prompt "{SYSTEM}" --tools Read,Glob,Grep,Agent`,',
        f"except the subagent session `{S2}`, which ran without `--bare` (`--bare` has no Agent tool;",
        "so that file has the environment, skill listing and prompt_snapshot attachments of a normal run).",
        "",
        "Working directories (created fresh under `/tmp/slsp-corpus` each run):",
        f"- `{SHOP}`: `{S1}` (READ, PAR of 3 files, `/compact`, a prompt, GREP, a second `/compact`,",
        f"  a prompt), `{S2}` (AGENT, no `--bare`: see `{S2}/subagents/`; the CLI runs the agent in the",
        "  background and answers its task notification in a second turn), a `--fork-session` of",
        f"  `{S1}` (the new session `{d.fork_id}`) and a `--continue` (which picked the fork: the",
        "  most recently modified file);",
        f"- `{OTHER}`: `{S3}` (a 529 overload retried once: `api_error` row; then `SLOW ...` SIGKILLed",
        "  mid-stream, then a resume, which wrote `No response requested.` for the killed turn);",
        f"- `{LONG}`",
        f"  ({len(str(LONG).encode('utf-16-le')) // 2} UTF-16 units, so the project folder has the hash suffix):"
        f" `{S4}` (READ, LS, which the CLI does not have: an error tool_result, GLOB);",
        f"- `{ZH}`: `{S5}` (Chinese prompt, READ);",
        f'- `{CAFE}`: `{S6}` started with `-n "{TITLE}"`, then resumed with `--resume "{TITLE}"`.',
        "",
        "`steps.log` lists every command in order with its cwd, stdout, exit code and the indexes",
        "(0-based lines of `api-requests.jsonl`) of the requests it made. `api-requests.jsonl` has one",
        "line per request in the shape of the shared corpus (`path`, `sessionId` from the request",
        "metadata, `messages` with block kinds, tool ids and texts up to 500 chars; system reminders and",
        "system messages scrubbed). Last, every session was resumed once more from its own cwd with",
        "`ORACLE <id>`; `oracles.json` maps each session file (path relative to this folder) to the index",
        "of that request, which is the chain the CLI rebuilt from the file's final state (less the last",
        "reply, `echo: ORACLE <id>`, which is the file's last turn).",
        "",
        f"Session files ({len(sessions)}), total size of this folder about {size // 1024} KiB:",
        *[f"- `{s}`" for s in sessions],
        "",
    ]
    (OUT / "README.md").write_text("\n".join(lines), encoding="utf-8")


def main() -> int:
    if find_claude() is None:
        print("REAL CLI NOT AVAILABLE: run scripts/setup.d/claude-cli.sh", file=sys.stderr)
        return 1
    make_tree()
    with ScriptedModelServer(seed="generated-corpus") as model:
        driver = Driver(model)
        drive(driver)
        requests = list(model.requests)
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    shutil.copytree(
        BASE / "config" / "projects", OUT / "projects", ignore=lambda d, names: [n for n in names if n == "memory"]
    )
    with (OUT / "api-requests.jsonl").open("w", encoding="utf-8") as f:
        for request in requests:
            f.write(json.dumps(condense(request), ensure_ascii=False) + "\n")
    (OUT / "steps.log").write_text("\n".join(driver.log) + "\n", encoding="utf-8")
    oracles = {f"projects/{k.removeprefix('projects/')}": v for k, v in sorted(driver.oracles.items())}
    (OUT / "oracles.json").write_text(json.dumps(oracles, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    write_readme(driver)
    print(f"wrote {OUT}: {len(requests)} requests, {len(oracles)} sessions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
