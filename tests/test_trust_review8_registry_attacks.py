"""Our live-session record (`<home>/sessions/<pid>.json`, `storage.livesession.LiveMark`) against a registry someone
tampered with, and left behind by a writer that was killed.

- Another config home's `sessions` (the record goes in every home of the projects folder that has a registry) made a
  link to a folder outside, or to nowhere: nothing is written through it, and the writer is refused (`unsafe`, naming
  the link), as it is when its own home's `sessions` is a link: a record the CLI of that home cannot see would let it
  resume the session we write (before: the writer went on without that record, silently).
- A `sessions/<pid>.json` planted before we write (a link to a file outside, a FIFO): replaced by our record, nothing
  outside touched, nothing blocks; its temporary name planted: refused, nothing outside touched.
- A writer SIGKILLed while it held a session leaves its record: a later writer of ours is admitted and the real CLI
  2.1.328 resumes the session, also while the killed writer is a zombie its parent has not reaped yet (before: our
  writer took the zombie for a live holder, `in-use`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from realcli import run_claude

from storage.errors import InUse, Unsafe
from storage.livesession import live_records
from storage.recorder import SessionRecorder

REPO = Path(__file__).resolve().parent.parent
FLAGS = ["--bare", "--system-prompt", "Scripted test model. Be brief.", "--tools", "Read"]


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """The person's config home `config`, whose `projects` is a link to `disk/projects` (so `config` and `disk` are
    both config homes of that folder), a working directory `shop`, and `outside`: a folder of the person's with a
    file, standing for `/etc` or `~/.ssh`."""
    config, disk, shop, outside = (tmp_path / name for name in ("config", "disk", "shop", "outside"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    (disk / "projects").mkdir(parents=True)
    (disk / "sessions").mkdir(mode=0o700)
    config.mkdir()
    (config / "projects").symlink_to(disk / "projects")
    shop.mkdir()
    outside.mkdir()
    (outside / "passwd").write_text("root:x:0:0\n")
    return {"config": config, "disk": disk, "shop": shop, "outside": outside}


def untouched(outside: Path) -> None:
    assert sorted(p.name for p in outside.iterdir()) == ["passwd"], sorted(outside.iterdir())
    assert (outside / "passwd").read_text() == "root:x:0:0\n"


def no_session_left(homes: dict[str, Path]) -> None:
    """The refused writer left no record and no session file."""
    for home in ("config", "disk"):
        assert not list((homes[home] / "sessions").glob("*.json")) if (homes[home] / "sessions").is_dir() else True
    assert not list((homes["disk"] / "projects").rglob("*.jsonl"))


# -- (a) another home's registry is a link ---------------------------------------------------------------------


@pytest.mark.parametrize("target", ["folder outside", "nowhere"])
def test_another_homes_registry_linked_out_gets_nothing_and_the_writer_is_refused(
    homes: dict[str, Path], target: str
) -> None:
    link = homes["config"] / "sessions"
    link.symlink_to(homes["outside"] if target == "folder outside" else homes["outside"] / "gone")
    with pytest.raises(Unsafe) as refused:
        SessionRecorder.create(homes["disk"] / "projects", str(homes["shop"]))
    assert str(link) in str(refused.value) and "link" in str(refused.value), refused.value
    untouched(homes["outside"])
    no_session_left(homes)


def test_the_named_homes_registry_linked_out_gets_nothing_and_the_writer_is_refused(homes: dict[str, Path]) -> None:
    (homes["disk"] / "sessions").rmdir()
    (homes["disk"] / "sessions").symlink_to(homes["outside"])
    with pytest.raises(Unsafe) as refused:
        SessionRecorder.create(homes["disk"] / "projects", str(homes["shop"]))
    assert str(homes["disk"] / "sessions") in str(refused.value) and "link" in str(refused.value), refused.value
    untouched(homes["outside"])
    assert not list((homes["disk"] / "projects").rglob("*.jsonl"))


# -- (b) our record's name, or its temporary name, planted -----------------------------------------------------


@pytest.mark.parametrize("home", ["disk", "config"])
@pytest.mark.parametrize("planted", ["link to a file outside", "link to a folder outside", "fifo"])
def test_a_record_planted_under_our_name_is_replaced(homes: dict[str, Path], home: str, planted: str) -> None:
    registry = homes[home] / "sessions"
    registry.mkdir(mode=0o700, exist_ok=True)
    mine = registry / f"{os.getpid()}.json"
    if planted == "fifo":
        os.mkfifo(mine)
    else:
        mine.symlink_to(homes["outside"] / "passwd" if "file" in planted else homes["outside"])
    rec = SessionRecorder.create(homes["disk"] / "projects", str(homes["shop"]))
    try:
        rec.record_prompt("hello")
        rec.flush()
        assert not mine.is_symlink() and mine.is_file(), "our record did not take the planted name's place"
        found = [r for r in live_records(homes[home]) if r.session_id == rec.session_id]
        assert found and found[0].pid == os.getpid()
    finally:
        rec.close()
    assert not os.path.lexists(mine)
    untouched(homes["outside"])


@pytest.mark.parametrize("home", ["disk", "config"])
@pytest.mark.parametrize("planted", ["link to a file outside", "fifo"])
def test_a_planted_temporary_record_refuses_the_writer(homes: dict[str, Path], home: str, planted: str) -> None:
    registry = homes[home] / "sessions"
    registry.mkdir(mode=0o700, exist_ok=True)
    temp = registry / f".{os.getpid()}.json.tmp"
    if planted == "fifo":
        os.mkfifo(temp)
    else:
        temp.symlink_to(homes["outside"] / "passwd")
    with pytest.raises(Unsafe):
        SessionRecorder.create(homes["disk"] / "projects", str(homes["shop"]))
    untouched(homes["outside"])
    assert not list((homes["disk"] / "projects").rglob("*.jsonl"))
    assert not list(registry.glob("*.json"))


# -- (c) a writer killed while it held the session -------------------------------------------------------------

HOLD = """
import sys, time
from pathlib import Path
from storage.recorder import SessionRecorder
rec = SessionRecorder.create(Path(sys.argv[1]), sys.argv[2], interval=None)
rec.record_prompt("hello")
rec.flush()
print(rec.path, flush=True)
time.sleep(600)
"""


@pytest.fixture
def killed_writer(homes: dict[str, Path]) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """A writer of ours in its own process, holding a new session of `shop` in `config/projects`, SIGKILLed (and
    not reaped: a zombie until the test waits for it)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(homes["config"] / "projects"), str(homes["shop"])],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        assert proc.stdout is not None
        path = Path(proc.stdout.readline().strip())
        assert path.is_file(), path
        os.kill(proc.pid, signal.SIGKILL)
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # dead, left a zombie: the status is not taken
        yield proc, path
    finally:
        proc.kill()
        proc.wait()


def left_record(homes: dict[str, Path], pid: int, session_id: str) -> Path:
    record = homes["config"] / "sessions" / f"{pid}.json"
    assert record.is_file() and session_id in record.read_text(), "the killed writer left no record"
    return record


@pytest.mark.parametrize("reaped", [True, False], ids=["reaped", "zombie"])
def test_a_killed_writers_record_blocks_no_later_writer(
    homes: dict[str, Path], killed_writer: tuple[subprocess.Popen[str], Path], reaped: bool
) -> None:
    proc, path = killed_writer
    if reaped:
        proc.wait()
    else:
        assert Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    record = left_record(homes, proc.pid, path.stem)
    try:
        rec = SessionRecorder.adopt(path, config_dir=homes["config"])
    except InUse as exc:
        pytest.fail(f"the killed writer's record kept a later writer out: {exc}")
    try:
        rec.record_prompt("again")
        rec.flush()
    finally:
        rec.close()
    assert b"again" in path.read_bytes()
    assert not record.exists(), "the later writer left the killed writer's record in place"


@pytest.mark.realcli
@pytest.mark.slow
@pytest.mark.parametrize("reaped", [True, False], ids=["reaped", "zombie"])
def test_the_real_cli_resumes_a_session_whose_writer_was_killed(
    claude: Path,
    model: Any,
    homes: dict[str, Path],
    killed_writer: tuple[subprocess.Popen[str], Path],
    reaped: bool,
) -> None:
    proc, path = killed_writer
    if reaped:
        proc.wait()
    record = left_record(homes, proc.pid, path.stem)
    if not reaped:  # the CLI alone takes a zombie's record for live: a later writer of ours came and went meanwhile
        rec = SessionRecorder.adopt(path, config_dir=homes["config"])
        rec.close()
        assert not record.exists()
    before = path.stat().st_size
    done = run_claude(
        ["hi", "--resume", path.stem, *FLAGS],
        cwd=homes["shop"],
        config_dir=homes["config"],
        base_url=model.base_url,
        timeout=120,
        claude=claude,
        allowed_tools=None,
    )
    assert done.returncode == 0, (done.stdout[-500:], done.stderr[-500:])
    assert path.stat().st_size > before, "the CLI did not continue the session"


def test_a_killed_guards_record_stays_while_its_writer_lives(homes: dict[str, Path]) -> None:
    """The second session a process holds is registered under a guard child (`<guard pid>.json`). A command that
    SIGKILLs the guard leaves it a zombie while the writer still writes: its record must stay for the CLI (which
    takes the zombie for live) until the writer releases it. Before, any later writer of ours swept it away as a
    dead writer's, and `claude --resume` could take the session being written."""
    first = SessionRecorder.create(homes["config"] / "projects", str(homes["shop"]), interval=None)
    second = SessionRecorder.create(homes["config"] / "projects", str(homes["shop"]), interval=None)
    try:
        first.record_prompt("one")
        second.record_prompt("two")
        first.flush()
        second.flush()
        guarded = {r.pid: r for r in live_records(homes["config"]) if r.session_id == second.session_id}
        (guard_pid,) = [pid for pid in guarded if pid != os.getpid()]
        os.kill(guard_pid, signal.SIGKILL)
        os.waitid(os.P_PID, guard_pid, os.WEXITED | os.WNOWAIT)  # a zombie: not reaped
        record = homes["config"] / "sessions" / f"{guard_pid}.json"
        third = SessionRecorder.create(homes["config"] / "projects", str(homes["shop"]), interval=None)
        third.close()
        assert record.is_file(), "a later writer of ours removed the record of a session still being written"
    finally:
        second.close()
        first.close()
    assert not (homes["config"] / "sessions" / f"{guard_pid}.json").exists()
