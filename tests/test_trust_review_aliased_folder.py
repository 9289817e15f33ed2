"""One writer per session however its folder is named. The named lock (`<config>/session-lsp/locks/<id>.lock`) and
the live-session registry are keyed on the config home as the caller names it, so two names for one projects
folder (`config/projects` a symlink to `disk/projects`, a bind mount, a second config home holding a hard link of
the file) gave two lock folders: a turn through one name and a turn, `rename` or `tag` through the other were both
admitted and both wrote. The right to write now also depends on the file itself: an exclusive open-file-description
lock on the transcript (`storage.admission.lock_file`), the same under every name.

Real `session-lsp` processes against the scripted test model, real files, no mocks: a turn holds its session while
it runs a command that never ends (`sleep 600`); the real CLI (2.1.328, offline) is run where it is installed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from realcli import OFFLINE_ENV, run_claude
from scripted_api import ScriptedModelServer
from turnproc import ROOT, TurnProcess, cli_env, new_session, session_lsp

LIVENESS = 10.0
"""A hang detector, not a speed requirement."""
CLI_FLAGS = ["--bare", "--system-prompt", "You are driven by a scripted test model.", "--tools", "Read"]


def _two_names(tmp_path: Path) -> tuple[Path, Path]:
    """(`config/projects`, a symlink, and `disk/projects`, the real folder it names): two config homes."""
    config, disk = tmp_path / "config", tmp_path / "disk"
    (disk / "projects").mkdir(parents=True)
    config.mkdir()
    (config / "projects").symlink_to(disk / "projects")
    return config / "projects", disk / "projects"


def _writes(sid: str, work: Path, projects: Path, tag: str) -> list[list[str]]:
    """A turn, a rename and a tag of `sid` through `projects`, each leaving `tag` in the file if it writes."""
    where = ["--projects-dir", str(projects)]
    return [
        ["turn", "--resume", sid, "--cwd", str(work), *where, "--provider", "anthropic", f"TURN {tag}"],
        ["rename", sid, f"TITLE {tag}", *where],
        ["tag", sid, f"tag-{tag}", *where],
    ]


def _assert_all_refused(
    sid: str, work: Path, projects: Path, path: Path, tag: str, holder_pid: int, *, why: str = "another path"
) -> None:
    before = path.read_bytes()
    for args in _writes(sid, work, projects, tag):
        done = session_lsp(*args, config=projects.parent)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1, (args[0], done.returncode, done.stderr[-1500:])
        assert "in use" in lines[0] and why in lines[0], (args[0], lines[0])
        if holder_pid:
            assert f"pid {holder_pid}" in lines[0], (args[0], lines[0])
    after = path.read_bytes()
    assert after == before, "a refused writer wrote into the session"
    assert tag.encode() not in after


def _refused_until_interrupted(
    holder: TurnProcess, sid: str, work: Path, projects: Path, path: Path, tag: str, pid: int
) -> None:
    """Once `holder` runs its command that never ends: every write through `projects` refused; then it is interrupted."""
    try:
        holder.wait_tool()
        _assert_all_refused(sid, work, projects, path, tag, pid)
        holder.interrupt()
        rc, _ = holder.wait(LIVENESS)
        assert rc == 130, holder.stderr[-1500:]
    finally:
        holder.kill()


def _assert_all_admitted(sid: str, work: Path, projects: Path, path: Path, tag: str) -> None:
    for args in _writes(sid, work, projects, tag):
        done = session_lsp(*args, config=projects.parent)
        assert done.returncode == 0, (args[0], done.stderr[-1500:])
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert any(r.get("customTitle") == f"TITLE {tag}" for r in rows)
    assert any(r.get("tag") == f"tag-{tag}" for r in rows)
    assert f"TURN {tag}" in path.read_text()


def test_a_turn_through_one_name_keeps_out_writers_through_the_other(tmp_path: Path, work: Path, marker: str) -> None:
    """The reproduction: a turn through `config/projects` (a symlink) holds the session; a turn, a rename and a
    tag through `disk/projects` (its real folder, another config home) are refused, naming the holder's pid, and
    write nothing; once the turn ends all three go through. Before: all three exited 0 and wrote."""
    linked, real = _two_names(tmp_path)
    sid, path = new_session(real, work)
    holder = TurnProcess(linked, work, f"BASH sleep 600; echo {marker} holding", "--resume", sid, "--allow", "Bash")
    _refused_until_interrupted(holder, sid, work, real, path, "THROUGH-THE-REAL-NAME", holder.pid)
    _assert_all_admitted(sid, work, real, path, "AFTER")


def test_a_turn_through_the_real_name_keeps_out_writers_through_the_link(
    tmp_path: Path, work: Path, marker: str
) -> None:
    """The same the other way round: the holder came by the real folder, the others by the symlink."""
    linked, real = _two_names(tmp_path)
    sid, path = new_session(real, work)
    holder = TurnProcess(real, work, f"BASH sleep 600; echo {marker} holding", "--resume", sid, "--allow", "Bash")
    _refused_until_interrupted(holder, sid, work, linked, path, "THROUGH-THE-LINK", holder.pid)
    _assert_all_admitted(sid, work, linked, path, "AFTER")


def test_a_new_session_is_held_by_its_file_once_made(tmp_path: Path, work: Path, marker: str) -> None:
    """A new session has no file to lock when its turn is admitted (the named lock covers it then); the turn's
    first append makes the file and locks it, so writers through the other name are refused from then on."""
    linked, real = _two_names(tmp_path)
    holder = TurnProcess(linked, work, f"BASH sleep 600; echo {marker} holding", "--new", "--allow", "Bash")
    try:
        holder.wait_tool()  # the prompt and the tool call are written before the command runs
        (path,) = real.glob("*/*.jsonl")
        sid = path.stem
        _assert_all_refused(sid, work, real, path, "INTO-THE-NEW-ONE", holder.pid)
        holder.interrupt()
        rc, _ = holder.wait(LIVENESS)
        assert rc == 130, holder.stderr[-1500:]
    finally:
        holder.kill()
    _assert_all_admitted(sid, work, real, path, "AFTER")


def test_a_hard_link_in_another_projects_folder(tmp_path: Path, work: Path, marker: str) -> None:
    """A second config home holding a hard link of the session file. While the file has two names, no writer
    of either is admitted (`unsafe`: a hard link is never written, as before). Once the first name is gone (the
    file moved to the other folder while the turn holds it), the other name is a session file like any: before,
    its writers were admitted beside the turn still holding the file; now they are refused until it ends."""
    first = tmp_path / "config" / "projects"
    first.mkdir(parents=True)
    sid, path = new_session(first, work)
    other = tmp_path / "other" / "projects"
    (other / path.parent.name).mkdir(parents=True)
    alias = other / path.parent.name / path.name
    holder = TurnProcess(first, work, f"BASH sleep 600; echo {marker} holding", "--resume", sid, "--allow", "Bash")
    try:
        holder.wait_tool()
        os.link(path, alias)
        before = path.read_bytes()
        for args in _writes(sid, work, other, "HARD-LINKED"):
            done = session_lsp(*args, config=other.parent)
            lines = done.stderr.strip().splitlines()
            assert done.returncode == 2 and len(lines) == 1, (args[0], done.returncode, done.stderr[-1500:])
            assert "hard link" in lines[0], (args[0], lines[0])
        assert path.read_bytes() == before
        path.unlink()  # one name again: the file now lives in the other folder only, still held by the turn
        assert os.stat(alias).st_nlink == 1
        _assert_all_refused(sid, work, other, alias, "MOVED-AWAY", holder.pid)
        holder.interrupt()  # its file is gone under its name: it writes nothing more ("moved or deleted")
        rc, _ = holder.wait(LIVENESS)
        assert rc is not None, "the holder did not end"
    finally:
        holder.kill()
    assert not path.exists(), "the holder made its file again"
    _assert_all_admitted(sid, work, other, alias, "AFTER")


def test_the_file_lock_goes_with_a_holder_killed_9(tmp_path: Path, work: Path, marker: str) -> None:
    """A holder killed with SIGKILL cannot release anything: its lock on the file goes with its last descriptor
    (the command it was running inherits none), so the session is free as soon as it is gone."""
    linked, real = _two_names(tmp_path)
    sid, path = new_session(real, work)
    holder = TurnProcess(linked, work, f"BASH sleep 600; echo {marker} holding", "--resume", sid, "--allow", "Bash")
    try:
        holder.wait_tool()
        _assert_all_refused(sid, work, real, path, "WHILE-HELD", holder.pid)
        holder.proc.send_signal(signal.SIGKILL)
        rc, _ = holder.wait(LIVENESS)
        assert rc == -signal.SIGKILL
    finally:
        holder.kill()
    _assert_all_admitted(sid, work, real, path, "AFTER-KILL")


@pytest.mark.realcli
def test_the_real_cli_appends_to_a_file_we_hold(
    claude: Path, scripted_model: ScriptedModelServer, tmp_path: Path, work: Path, marker: str
) -> None:
    """Our lock is a byte range far past the end, advisory: the real CLI (which takes none) resumes the held
    session by its path (`--resume <file>` skips its live-session check) and appends as ever. The lock is still
    held after it wrote: writers through the other name are refused. (The holder then sees bytes it did not
    write and stops: `test_trust_two_writers.py`.)"""
    linked, real = _two_names(tmp_path)
    sid, path = new_session(real, work)
    holder = TurnProcess(linked, work, f"BASH sleep 600; echo {marker} holding", "--resume", sid, "--allow", "Bash")
    try:
        holder.wait_tool()
        done = run_claude(
            ["CLI-WROTE-THIS", "--resume", str(path), *CLI_FLAGS],
            cwd=work,
            config_dir=real.parent,
            base_url=scripted_model.base_url,
            timeout=120,
            claude=claude,
            allowed_tools=None,
        )
        assert done.returncode == 0, (done.stdout[-1500:], done.stderr[-1500:])
        text = path.read_text()
        assert "CLI-WROTE-THIS" in text and "echo: CLI-WROTE-THIS" in text, "the CLI did not append"
        written = [json.loads(line) for line in text.splitlines() if "CLI-WROTE-THIS" in line]
        assert {row.get("version") for row in written if row.get("uuid")} == {"2.1.328"}, written
        _assert_all_refused(sid, work, real, path, "AFTER-THE-CLI", holder.pid)
        holder.interrupt()
        rc, _ = holder.wait(LIVENESS)
        assert rc is not None, "the holder did not end"
    finally:
        holder.kill()
    assert all(json.loads(line) for line in path.read_text().splitlines())


@pytest.mark.realcli
def test_the_claude_cli_provider_holds_the_file_while_the_cli_writes(
    claude: Path, scripted_model: ScriptedModelServer, tmp_path: Path, work: Path
) -> None:
    """`turn --provider claude-cli --resume` through the symlink: the real CLI runs the turn and appends while
    our process holds the file. From inside that turn (a Bash call the CLI runs) a `rename` through the real
    folder is refused; the CLI's turn goes on and its rows are in the file."""
    linked, real = _two_names(tmp_path)
    sid, path = new_session(real, work)
    probe = tmp_path / "probe.txt"
    rename = (
        f"cd {ROOT} && CLAUDE_CONFIG_DIR={real.parent} {sys.executable} -m server.cli rename {sid} 'TITLE FROM INSIDE'"
        f" --projects-dir {real} > {probe} 2>&1; echo rc=$? >> {probe}"
    )
    env = {**cli_env(linked.parent), "SESSION_LSP_CLAUDE": str(claude), **OFFLINE_ENV}
    env["CLAUDE_CODE_TMPDIR"] = str(tmp_path / "tmp")
    done = subprocess.run(
        [sys.executable, "-m", "server.cli", "turn", "--resume", sid, "--cwd", str(work), "--projects-dir"]
        + [str(linked), "--provider", "claude-cli", "--allow", "Bash", f"BASH {rename}"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, (done.stdout[-1500:], done.stderr[-1500:])
    said = probe.read_text()
    assert "rc=2" in said and "in use" in said and "another path" in said, said
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert not [r for r in rows if r.get("type") == "custom-title"], "the refused rename wrote"
    assert any(r.get("version") == "2.1.328" and r.get("type") == "assistant" for r in rows), "the CLI wrote nothing"
    done = session_lsp("rename", sid, "TITLE AFTER", "--projects-dir", str(real), config=real.parent)
    assert done.returncode == 0, done.stderr
