"""Interop with the real Claude Code CLI: it resumes what we write, and we honour each other's
live sessions. The CLI runs offline against the scripted Messages API on loopback.

These tests skip only when the CLI binary cannot be found, and then say so loudly.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from conftest import TESTS
from oracle import SCRUBBED_REMINDER, differences
from realcli import run_claude
from writers.conversations import Script

from storage.apiform import CONTINUE
from storage.fork import fork_session
from storage.livesession import SessionInUse, live_records
from storage.recorder import SessionRecorder
from storage.resume import resume

pytestmark = [pytest.mark.realcli, pytest.mark.slow]


SYSTEM = "You are driven by a scripted test model. Be brief."
FLAGS = ["--bare", "--system-prompt", SYSTEM, "--tools", "Read,Glob,Grep,Agent"]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, Path]:
    shop = tmp_path / "shop"
    shop.mkdir()
    for name in ("a.txt", "b.txt", "c.txt"):
        (shop / name).write_text(f"contents of {name}\n")
    return {"shop": shop, "config": tmp_path / "config", "projects": tmp_path / "config" / "projects"}


def sent_form(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A request's conversation as the corpus oracles record it: reminders scrubbed, the empty
    system message that only carries the request's `output_config` left out."""
    out = []
    for m in messages:
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        if m.get("role") == "system" and not blocks and "output_config" in m:
            continue
        scrubbed = []
        for b in blocks:
            if b.get("type") == "text" and str(b.get("text", "")).startswith("<system-reminder>"):
                b = {"type": "text", "text": SCRUBBED_REMINDER}
            scrubbed.append(b)
        out.append({"role": m["role"], "content": scrubbed})
    return out


def resume_with_cli(claude: Path, model: Any, env: dict[str, Path], sid: str, prompt: str) -> dict[str, Any]:
    first = len(model.requests)
    done = run_claude(
        [prompt, "--resume", sid, *FLAGS],
        cwd=env["shop"],
        config_dir=env["config"],
        base_url=model.base_url,
        timeout=120,
        claude=claude,
        allowed_tools=None,
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    mine = [r for r in model.requests[first:] if r.get("sessionId") == sid]
    assert mine, f"the CLI sent nothing for {sid}: {done.stdout} {done.stderr}"
    return mine[0]


def _no_system(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        if m["role"] == "system":
            continue
        if out and out[-1]["role"] == m["role"] == "user":
            out[-1] = {"role": "user", "content": out[-1]["content"] + m["content"]}
        else:
            out.append(m)
    return out


def assert_cli_sees(
    ours: list[dict[str, Any]], request: dict[str, Any], prompt: str, *, strict_system: bool = True
) -> None:
    """What the CLI sent starts with our API form, then the new prompt. With `strict_system`
    off, system messages are left out on both sides: the CLI does not resend some system
    attachments that it wrote itself (e.g. the `date` reminder), a read-side difference."""
    sent = sent_form(request["messages"])
    last = ours[-1] if ours else None
    if last and last["role"] == "user" and last["content"] and last["content"][-1].get("text") == CONTINUE:
        # resumed mid-turn with a new prompt, the CLI sends the prompt instead of its "Continue" nudge
        ours = [*ours[:-1], {"role": "user", "content": last["content"][:-1]}]
    if not strict_system:
        ours, sent = _no_system(ours), _no_system(sent)
    assert differences(ours, sent[: len(ours)]) == [], json.dumps(sent, ensure_ascii=False)[:3000]
    rest = json.dumps(sent[len(ours) :], ensure_ascii=False)
    assert prompt in rest


def record_conversation(rec: SessionRecorder, shop: Path) -> Script:
    script = Script(rec, files=[str(shop / "a.txt"), str(shop / "b.txt"), str(shop / "c.txt")])
    for step in [
        ("text", "hello there"),
        ("tools", 2, [1, 0]),
        ("agent", f"READ {shop / 'c.txt'}"),
        ("tools", 3, [0, 1, 2]),
        ("text", "检查审计日志 — done?"),
    ]:
        script.play(step)
    return script


def test_cli_resumes_a_session_recorded_from_scratch(claude: Path, model: Any, env: dict[str, Path]) -> None:
    rec = SessionRecorder.create(env["projects"], str(env["shop"]))
    record_conversation(rec, env["shop"])
    rec.set_title("from scratch")
    rec.close()
    ours = resume(rec.path).messages
    prompt = f"ORACLE {rec.session_id}"
    request = resume_with_cli(claude, model, env, rec.session_id, prompt)
    assert_cli_sees(ours, request, prompt)
    # and the CLI appended to our file cleanly
    after = resume(rec.path)
    assert after.messages[-1]["content"][0]["text"] == f"echo: {prompt}"
    assert not after.transcript.problems


def test_cli_resumes_a_session_we_appended_to(claude: Path, model: Any, env: dict[str, Path]) -> None:
    sid = str(uuid.uuid4())
    done = run_claude(
        [f"READ {env['shop'] / 'a.txt'}", "--session-id", sid, *FLAGS],
        cwd=env["shop"],
        config_dir=env["config"],
        base_url=model.base_url,
        timeout=120,
        claude=claude,
        allowed_tools=None,
    )
    assert done.returncode == 0, done.stderr
    path = next(env["projects"].glob(f"*/{sid}.jsonl"))
    rec = SessionRecorder.adopt(path)
    record_conversation(rec, env["shop"])
    rec.close()
    ours = resume(path).messages
    prompt = f"ORACLE {sid}"
    assert_cli_sees(ours, resume_with_cli(claude, model, env, sid, prompt), prompt, strict_system=False)


@pytest.mark.parametrize("kind", ["fork-session", "at-message"])
def test_cli_resumes_our_forks(claude: Path, model: Any, env: dict[str, Path], kind: str) -> None:
    sid = str(uuid.uuid4())
    done = run_claude(
        [f"PAR {env['shop'] / 'a.txt'} {env['shop'] / 'b.txt'}", "--session-id", sid, *FLAGS],
        cwd=env["shop"],
        config_dir=env["config"],
        base_url=model.base_url,
        timeout=120,
        claude=claude,
        allowed_tools=None,
    )
    assert done.returncode == 0, done.stderr
    source = next(env["projects"].glob(f"*/{sid}.jsonl"))
    rec = SessionRecorder.adopt(source)
    record_conversation(rec, env["shop"])
    rec.close()
    src = resume(source)
    at = None
    if kind == "at-message":
        at = [r for r in src.chain.rows if r.type == "assistant"][-3].uuid
    new_sid, path = fork_session(source, source.parent.parent, at_uuid=at, title=f"fork {kind}")
    ours = resume(path).messages
    if at is None:
        assert ours == src.messages
    prompt = f"ORACLE {new_sid}"
    assert_cli_sees(ours, resume_with_cli(claude, model, env, new_sid, prompt), prompt, strict_system=False)


def test_live_sessions_are_honoured_both_ways(claude: Path, model: Any, env: dict[str, Path]) -> None:
    # ours is live: the CLI refuses to resume it
    rec = SessionRecorder.create(env["projects"], str(env["shop"]))
    rec.record_prompt("hello")
    rec.flush()
    done = run_claude(
        ["hi", "--resume", rec.session_id, *FLAGS],
        cwd=env["shop"],
        config_dir=env["config"],
        base_url=model.base_url,
        timeout=120,
        claude=claude,
        allowed_tools=None,
    )
    assert done.returncode != 0 and "running in the background" in done.stderr + done.stdout
    # --session-id with our id: "already in use" (the file exists)
    done = run_claude(
        ["hi", "--session-id", rec.session_id, *FLAGS],
        cwd=env["shop"],
        config_dir=env["config"],
        base_url=model.base_url,
        timeout=120,
        claude=claude,
        allowed_tools=None,
    )
    assert done.returncode != 0 and f"Session ID {rec.session_id} is already in use" in done.stderr + done.stdout
    rec.close()
    # the CLI is live: we refuse to write into its session
    import subprocess

    from realcli import claude_env

    sid = str(uuid.uuid4())
    proc = subprocess.Popen(
        [str(claude), "-p", "SLOW a slow reply", "--session-id", sid, *FLAGS],
        cwd=env["shop"],
        env=claude_env(config_dir=env["config"], base_url=model.base_url, home=env["config"].parent / "home"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        path = None
        while time.monotonic() < deadline and path is None:
            path = next(env["projects"].glob(f"*/{sid}.jsonl"), None)
            time.sleep(0.1)
        assert path is not None
        assert any(r.session_id == sid for r in live_records(env["config"]))
        with pytest.raises(SessionInUse):
            SessionRecorder.adopt(path)
    finally:
        proc.wait(timeout=60)
    SessionRecorder.adopt(path).close()  # free once the CLI exited


def test_new_user_forks_real_sessions_with_subagent_and_fork(claude: Path, model: Any, tmp_path: Path) -> None:
    """The generated corpus: S2 ran a subagent, d31a4daa is a --fork-session of S1. Copy them under a
    config dir whose project folder matches a cwd we create, fork, and let the CLI resume."""
    generated = TESTS / "corpus" / "generated" / "projects" / "-tmp-slsp-corpus-shop"
    shop = Path("/tmp/slsp-corpus/shop")
    if not shop.is_dir():
        shop.mkdir(parents=True)
    config = tmp_path / "config"
    shutil.copytree(generated, config / "projects" / generated.name)
    env = {"shop": shop, "config": config, "projects": config / "projects"}
    for name in ("22222222-2222-4222-8222-222222222222", "d31a4daa-f5b8-4d73-979d-614c6c4d29bf"):
        source = env["projects"] / generated.name / f"{name}.jsonl"
        original = resume(source).messages
        new_sid, path = fork_session(source, source.parent.parent)
        assert resume(path).messages == original
        prompt = f"ORACLE {new_sid}"
        assert_cli_sees(original, resume_with_cli(claude, model, env, new_sid, prompt), prompt, strict_system=False)
