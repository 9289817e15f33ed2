"""Write tests/corpus/mutations: what the real CLI sent on resuming damaged copies of real transcripts.

Every mutation of tests/mutations.py is applied, with its seed, to a few sessions of the other
corpora; the real Claude Code CLI resumes each damaged copy offline (print mode, against the scripted
test model, in the mode the source was resumed in) from a fresh projects folder under
/tmp/slsp-mutations (wiped first), with the prompt `ORACLE <id>`. The damaged files are not kept (one is
several MB): `cases.json` has each case's source, mutation, session id, sha256 and size (the test
rebuilds the bytes and checks them), and either the line of `api-requests.jsonl` holding what the CLI
sent before its new prompt (texts in full, as in tests/corpus/extra) or, when it refused the file, what
it printed. `steps.log` lists every run.
Run: ``.venv/bin/python tests/corpus/mutations/make_mutations.py [MUTATION ...]`` (needs the real CLI;
with names, only those cases are run again and merged into the recorded ones).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TESTS = HERE.parents[1]
REPO = TESTS.parent
sys.path[:0] = [str(REPO), str(TESTS)]

from mutations import MUTATIONS, case_id, mutate  # noqa: E402
from oracle import condensed  # noqa: E402
from realcli import find_claude, run_claude  # noqa: E402
from scripted_api import ScriptedModelServer  # noqa: E402

from storage.paths import project_folder_name  # noqa: E402

BASE = Path("/tmp/slsp-mutations")
SYSTEM = "Scripted test model. Be brief."
FLAGS = ["--system-prompt", SYSTEM, "--tools", "Read,Glob,Grep,Agent"]
"""Agent among the tools: 2.1.328 sends an old `Task` call as `Agent` only when it has that tool."""
SOURCES = {
    # a compacted session, resumed bare
    "extra/projects/-tmp-slsp-extra-work/e1111111-1111-4111-8111-111111111111.jsonl": True,
    # a session in a folder with CJK characters in its path, resumed bare
    "generated/projects/-tmp-slsp-corpus------/55555555-5555-4555-8555-555555555555.jsonl": True,
    # a session written by CLI 1.0.128, resumed in full (attachments, model restored)
    "versions/claude-code-1.0.128/projects/-tmp-slsp-versions-1-0-128-work/10000001-0000-4000-8000-000000010128.jsonl": False,
    # a session killed mid-tool (as the kill left it), resumed in full
    "extra/killed/e4444444-4444-4444-8444-444444444444.jsonl": False,
}


def source_cwd(data: bytes) -> str:
    for line in data.splitlines():
        entry = json.loads(line)
        if entry.get("cwd"):
            return str(entry["cwd"])
    raise ValueError("no cwd in the source")


def sent_before_prompt(messages: list[dict[str, Any]], sid: str) -> list[dict[str, Any]] | None:
    prompt = f"ORACLE {sid}"
    hits = [i for i, m in enumerate(messages) if m["role"] == "user" and any(
        b.get("type") == "text" and b.get("text", "").strip() == prompt for b in m["content"])]  # fmt: skip
    return messages[: hits[-1]] if hits else None


def run_case(
    model: ScriptedModelServer, rel: str, mutation: str, log: list[str], base: Path = BASE
) -> dict[str, Any] | None:
    """Resume the damaged copy of `rel` with the real CLI (in a fresh folder under `base`): its case."""

    data = (TESTS / "corpus" / rel).read_bytes()
    source_sid = Path(rel).stem
    out = mutate(data, source_sid, mutation)
    if out is None:
        return None
    sid = case_id(source_sid, mutation)
    cwd = source_cwd(data)
    config = base / sid / "config"
    folder = config / "projects" / project_folder_name(cwd)
    folder.mkdir(parents=True)
    (folder / f"{sid}.jsonl").write_bytes(out.data)
    Path(cwd).mkdir(parents=True, exist_ok=True)
    bare = SOURCES[rel]
    first = len(model.requests)
    started = time.monotonic()
    done = run_claude(
        [f"ORACLE {sid}", "--resume", sid, *(["--bare"] if bare else []), *FLAGS],
        cwd=cwd,
        config_dir=config,
        base_url=model.base_url,
        home=base / sid / "home",
        timeout=180,
        allowed_tools=None,
    )
    mine = [r for r in model.requests[first:] if r.get("sessionId") == sid]
    sent = sent_before_prompt(condensed(mine[0]["messages"]), sid) if mine else None
    log.append(f"== {mutation} of {rel} as {sid} ({'bare' if bare else 'full'}): rc={done.returncode} "
               f"requests={len(mine)} {time.monotonic() - started:.1f}s")  # fmt: skip
    log.append((done.stdout + done.stderr).strip()[:500])
    case: dict[str, Any] = {
        "source": rel,
        "mutation": mutation,
        "sessionId": sid,
        "cwd": cwd,
        "bare": bare,
        "sha256": hashlib.sha256(out.data).hexdigest(),
        "size": len(out.data),
        "badLines": out.bad_lines,
        "exitCode": done.returncode,
        "sent": sent,
    }
    if sent is None:
        case["refused"] = (done.stdout + done.stderr).strip()[:300]
    return case


def main(argv: list[str]) -> int:
    if find_claude() is None:
        print("REAL CLI NOT AVAILABLE", file=sys.stderr)
        return 1
    only = argv or list(MUTATIONS)
    recorded = load_cases() if argv and (HERE / "cases.json").exists() else {}
    shutil.rmtree(BASE, ignore_errors=True)
    log: list[str] = []
    with ScriptedModelServer(seed="mutations-corpus") as model:
        for rel in SOURCES:
            for mutation in only:
                case = run_case(model, rel, mutation, log)
                if case is not None:
                    recorded[f"{Path(rel).stem[:8]}/{mutation}"] = case
                    print(log[-2], flush=True)
    write_cases(recorded)
    with (HERE / "steps.log").open("a" if argv else "w", encoding="utf-8") as f:
        f.write("\n".join(log) + "\n")
    print(f"wrote {HERE}: {len(recorded)} cases")
    return 0


def load_cases() -> dict[str, dict[str, Any]]:
    cases = json.loads((HERE / "cases.json").read_text(encoding="utf-8"))
    requests = [json.loads(line) for line in (HERE / "api-requests.jsonl").read_text(encoding="utf-8").splitlines()]
    for case in cases.values():
        at = case.pop("request")
        case["sent"] = requests[at] if at is not None else None
    return cases


def write_cases(cases: dict[str, dict[str, Any]]) -> None:
    out: dict[str, dict[str, Any]] = {}
    with (HERE / "api-requests.jsonl").open("w", encoding="utf-8") as f:
        n = 0
        for key in sorted(cases):
            case = dict(cases[key])
            sent = case.pop("sent")
            case["request"] = None if sent is None else n
            if sent is not None:
                f.write(json.dumps(sent, ensure_ascii=False) + "\n")
                n += 1
            out[key] = case
    (HERE / "cases.json").write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
