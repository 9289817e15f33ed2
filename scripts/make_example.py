"""Write examples/projects, the bundled example: sessions written by the real Claude Code CLI.

The CLI runs in print mode, fully offline, against the scripted test model (tests/scripted_api.py)
replying from the story in scripts/example_story.py, in a made-up project `ledger` (a tiny Python
package with a rounding bug and its tests) under /tmp/slsp-example/home/dev (wiped first). Steps:
a bug hunt (Grep, Read, Bash, Edit, Bash), `/compact`, a regression test (Read, Edit, Bash), an audit
by a subagent (Agent, then Grep and Read inside it), and a `--fork-session` of the audit that changes
the tax rounding (Read, Edit, Edit, Bash). Then the CLI's `projects/` folder is copied to
examples/projects with every path rewritten from /tmp/slsp-example/home/dev/... to /home/dev/...
(tests/test_example_projects.py checks that the real CLI still resumes each session and sends what
we read). Uuids and timestamps differ on each run; the conversation does not. Run:
`.venv/bin/python scripts/make_example.py` (needs the real CLI, see scripts/setup.d/claude-cli.sh).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "scripts"), str(REPO / "tests")]

import example_story as story  # noqa: E402
from realcli import find_claude, run_claude  # noqa: E402
from scripted_api import ScriptedModelServer  # noqa: E402

BASE = Path("/tmp/slsp-example")
"""Stands for `/` while the CLI runs: every path under it loses this prefix in the example."""
HOME = BASE / "home" / "dev"
WORK = HOME / "ledger"
CONFIG = HOME / ".claude"
OUT = REPO / "examples" / "projects"
TOOLS = ("Read", "Grep", "Glob", "Edit", "Bash", "Agent")
BUG_HUNT = "5b0e8c1a-3d7f-4a92-b6e4-1c9d2f7a8e35"
AUDIT = "c7a41e96-0f28-4b3d-9e5a-62d8b1f4c09e"
BUG_TITLE = "Missing cent when splitting an invoice"
AUDIT_TITLE = "Audit money rounding before merge"
GIT_DATE = "2026-11-02T09:30:00+00:00"
FORK_TITLE = "Tax rounding half up (branch)"


def make_project() -> None:
    shutil.rmtree(BASE, ignore_errors=True)
    for rel, text in story.PROJECT.items():
        path = WORK / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    git = ["git", "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=WORK, check=True)
    subprocess.run([*git, "add", "."], cwd=WORK, check=True)
    dated = {**os.environ, "GIT_AUTHOR_DATE": GIT_DATE, "GIT_COMMITTER_DATE": GIT_DATE}  # the same hash each run
    subprocess.run(
        [*git, "commit", "-q", "-m", "ledger: invoices split between payers"], cwd=WORK, check=True, env=dated
    )


class Driver:
    """Runs the CLI steps in the project folder and keeps a log of each."""

    def __init__(self, model: ScriptedModelServer, unscripted: list[str]) -> None:
        self.model = model
        self.unscripted = unscripted
        self.log: list[str] = []

    def step(self, prompt: str, *args: str) -> str:
        first = len(self.model.requests)
        done = run_claude(
            [prompt, *args],
            cwd=WORK,
            config_dir=CONFIG,
            base_url=self.model.base_url,
            home=HOME,
            timeout=300,
            allowed_tools=TOOLS,
        )
        self.log.append(f"== -p {prompt} {' '.join(args)}\n{done.stdout.rstrip()}\nrc={done.returncode}")
        self.log.append(f"requests {first}..{len(self.model.requests) - 1}")
        if done.returncode != 0 or self.unscripted:
            raise SystemExit("\n".join([*self.log, done.stderr, *self.unscripted]))
        return str(self.model.requests[-1]["sessionId"])


def drive(d: Driver) -> str:
    """All steps; returns the fork's session id."""
    d.step(story.BUG_PROMPT, "--session-id", BUG_HUNT, "-n", BUG_TITLE)
    d.step("/compact", "--resume", BUG_HUNT)
    d.step(story.TEST_PROMPT, "--resume", BUG_HUNT)
    d.step(story.AUDIT_PROMPT, "--session-id", AUDIT, "-n", AUDIT_TITLE)
    return d.step(story.FORK_PROMPT, "--resume", AUDIT, "--fork-session", "-n", FORK_TITLE)


def neutral(text: str) -> str:
    """/tmp/slsp-example/home/dev/... as /home/dev/..., in paths and in project folder names."""
    escaped = "".join(c if c.isalnum() else "-" for c in str(BASE))
    return text.replace(str(BASE), "").replace(escaped + "-", "-")


EXAMPLE_PROJECT = "-home-dev-ledger"
"""The one project folder the example holds (the made-up project's neutral path)."""


def check_out(out: Path) -> None:
    """`out` is wiped and rewritten: it must not exist yet, or hold nothing but the example's project
    folder (an earlier run), so that `--out ~/.claude/projects` or `--out ~` never deletes anything."""
    if not os.path.lexists(out):
        return
    if out.is_symlink() or not out.is_dir():
        raise SystemExit(f"--out {out}: not a folder; nothing written")
    others = sorted(p.name for p in out.iterdir() if p.name != EXAMPLE_PROJECT)
    if others:
        shown = ", ".join(others[:5]) + (", ..." if len(others) > 5 else "")
        raise SystemExit(f"--out {out} holds more than an earlier example ({shown}); give an empty or new folder")


def export(source: Path, out: Path) -> list[Path]:
    """Copy the CLI's projects folder to `out` with neutral paths; returns the files written."""
    shutil.rmtree(out, ignore_errors=True)
    written = []
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source)
        if not path.is_file() or "memory" in rel.parts:
            continue
        target = out / neutral(rel.as_posix())
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(neutral(path.read_text(encoding="utf-8")), encoding="utf-8")
        written.append(target)
    leftover = [p for p in written if str(BASE) in p.read_text(encoding="utf-8")]
    if leftover:
        raise SystemExit(f"paths under {BASE} left in {leftover}")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"folder to (re)write (default: {OUT})")
    args = parser.parse_args(argv)
    check_out(args.out)
    if find_claude() is None:
        print("REAL CLI NOT AVAILABLE: run scripts/setup.d/claude-cli.sh", file=sys.stderr)
        return 1
    make_project()
    unscripted: list[str] = []
    with ScriptedModelServer(seed="bundled-example", planner=story.planner(WORK, unscripted)) as model:
        driver = Driver(model, unscripted)
        fork = drive(driver)
        requests = len(model.requests)
    written = export(CONFIG / "projects", args.out)
    sessions = sorted(p.name for p in written if p.suffix == ".jsonl" and p.parent.parent == args.out)
    print("\n".join(driver.log))
    print(json.dumps({"requests": requests, "fork": fork, "sessions": sessions}, indent=2))
    print(f"wrote {len(written)} files under {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
