"""The file system changing under a turn's writer: the session file made immutable (read-only even for
root), its project folder moved away while the model goes on, a subagent started after the session's folder
went. Real files, the real `session-lsp turn` command and the scripted test model on loopback; each test
checks that nothing was made that was not there, that the file keeps whole lines, and that the error is one
clear line."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_lsp
from conftest import CORPUS, chattr_files
from lspserver import SERVER, open_session
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient
from scripted_api import ScriptedModelServer, session_id_from_metadata

from server.lsp.server import to_plain

SHOP = "-Users-me-shop"
S1 = "11111111-1111-4111-8111-111111111111"
REPO = Path(__file__).resolve().parent.parent
REQUEST_FAILED = -32803


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server.cli", *args], capture_output=True, text=True, cwd=REPO, timeout=120
    )


def tree(root: Path) -> list[str]:
    """Every path under `root` but the live-session registry (our record goes when the recorder closes)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if "sessions" not in p.relative_to(root).parts)


def requests_of(model: ScriptedModelServer, session_id: str) -> int:
    return sum(1 for r in model.requests if session_id_from_metadata(r) == session_id)


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    projects = tmp_path / "config" / "projects"
    shutil.copytree(CORPUS / "projects", projects)
    work = tmp_path / "work"
    work.mkdir()
    return {"projects": projects, "work": work, "tmp": tmp_path}


@pytest.fixture
def immutable(tmp_path: Path) -> Iterator[list[Path]]:
    """Files the test makes immutable (`chattr +i`: read-only even for root); made mutable again at the end."""
    yield from chattr_files(tmp_path, "i")


def test_a_session_file_made_immutable_during_a_turn_is_one_clear_error(
    world: dict[str, Path], immutable: list[Path], scripted_model: ScriptedModelServer
) -> None:
    """The model's Bash call makes the resumed session's file immutable (as root can't make it read-only by its
    mode). Before, the turn asked the model again, then failed at its end with a traceback and status 1; now the
    append's refusal is a `session-lsp:` line naming the file and the reason, status 2, the model is not asked
    again, and the file holds what was written before, whole lines."""
    path = world["projects"] / SHOP / f"{S1}.jsonl"
    immutable.append(path)
    before = path.read_bytes()
    asked = requests_of(scripted_model, S1)
    out = cli(
        "turn", "--resume", S1, "--provider", "anthropic", "--allow", "Bash", "--cwd", str(world["work"]),
        "--projects-dir", str(world["projects"]), f"BASH chattr +i {path}",
    )  # fmt: skip
    assert "i" in subprocess.run(["lsattr", str(path)], capture_output=True, text=True).stdout.split()[0]
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "Traceback" not in out.stderr, out.stderr
    last = out.stderr.splitlines()[-1]
    assert last.startswith("session-lsp: ") and str(path) in last and "Operation not permitted" in last, out.stderr
    assert requests_of(scripted_model, S1) - asked == 1
    after = path.read_bytes()
    assert after.startswith(before) and after.endswith(b"\n") and len(after) > len(before)


@pytest.mark.realcli
def test_the_real_cli_resumes_what_a_turn_stopped_by_an_immutable_file_left(
    world: dict[str, Path], immutable: list[Path], scripted_model: ScriptedModelServer
) -> None:
    """What the turn stopped by an immutable session file left (its prompt and the model's Bash call, not the call's
    result) is whole lines the real CLI 2.1.328 resumes once the file is writable again: it sends our prompt and the
    call on, answers, and writes after our rows."""
    from realcli import find_claude, run_claude

    claude = find_claude()
    if claude is None:
        pytest.skip("REAL CLI NOT AVAILABLE (run scripts/setup.d/claude-cli.sh)")
    path = world["projects"] / SHOP / f"{S1}.jsonl"
    immutable.append(path)
    prompt = f"BASH chattr +i {path}"
    out = cli(
        "turn", "--resume", S1, "--provider", "anthropic", "--allow", "Bash", "--cwd", str(world["work"]),
        "--projects-dir", str(world["projects"]), prompt,
    )  # fmt: skip
    assert out.returncode == 2, (out.stdout, out.stderr)
    subprocess.run(["chattr", "-i", str(path)], check=True)
    left = path.read_bytes()
    done = run_claude(
        ["AFTER", "--resume", str(path), "--bare", "--tools", "Read"],
        cwd=world["work"],
        config_dir=world["projects"].parent,
        base_url=scripted_model.base_url,
        claude=claude,
        allowed_tools=None,
    )
    assert done.returncode == 0 and "echo: AFTER" in done.stdout, (done.stdout, done.stderr)
    sent = json.dumps(scripted_model.requests[-1]["messages"])
    assert prompt in sent and '"name": "Bash"' in sent
    assert path.read_bytes().startswith(left) and b"echo: AFTER" in path.read_bytes()[len(left) :]


def test_a_turn_whose_file_went_away_asks_the_model_nothing_more(
    world: dict[str, Path], scripted_model: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model's Bash call moves the project folder away: the tool's result cannot be recorded. Before, the turn
    went on (it asked the model again with the result and printed its reply, recorded nowhere) and failed only at
    its end; now it stops at the first write refused, before the next request."""
    # the Bash call stands for another process acting during the turn: it runs unconfined
    monkeypatch.setenv("SESSION_LSP_BASH_SANDBOX", "off")
    projects = world["projects"]
    folder, moved = projects / SHOP, projects / "moved-away"
    asked = requests_of(scripted_model, S1)
    out = cli(
        "turn", "--resume", S1, "--provider", "anthropic", "--allow", "Bash", "--cwd", str(world["work"]),
        "--projects-dir", str(projects), f"BASH mv {folder} {moved}",
    )  # fmt: skip
    assert moved.is_dir() and not folder.exists(), out.stderr
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "moved or deleted" in out.stderr.splitlines()[-1], out.stderr
    assert requests_of(scripted_model, S1) - asked == 1
    assert "I read it" not in out.stdout, out.stdout


@pytest.mark.parametrize("gone", ["project folder", "session file", "subagents folder"])
def test_a_subagent_started_after_its_session_went_makes_no_folder(tmp_path: Path, gone: str) -> None:
    """A session is written, then its project folder (or its file) is moved away before a subagent's first row,
    or the `<session>/subagents` folder after the subagent's `.meta.json` was written, before its first row was. Before, the subagent's
    first write made the missing folders again (0700) with its `.meta.json` and its rows, beside no session; now
    it raises `Vanished`, nothing is made, and the moved session is untouched."""
    from storage.recorder import SessionRecorder
    from storage.writequeue import Vanished

    projects, work = tmp_path / "config" / "projects", tmp_path / "work"
    work.mkdir()
    rec = SessionRecorder.create(projects, str(work), interval=None)
    rec.record_prompt("hello")
    rec.flush()
    folder = rec.path.parent
    aside = tmp_path / "aside"
    sub = rec.record_subagent("a0123456789abcdef", description="look around")
    if gone == "subagents folder":
        sub.record_prompt("first row")  # writes the `.meta.json`, queues the row
        sub.path.parent.rename(aside)
    else:
        (folder if gone == "project folder" else rec.path).rename(aside)
    before = tree(tmp_path)
    with pytest.raises(Vanished):
        if gone != "subagents folder":
            sub.record_prompt("inside the subagent")
        rec.flush()
    assert tree(tmp_path) == before
    with pytest.raises(Vanished):
        rec.close()
    assert tree(tmp_path) == before
    if gone != "subagents folder":
        assert not os.path.lexists(sub.meta_path) and not os.path.lexists(sub.path)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 64 KiB file system (tmpfs) to fill up; unmounted at the end."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    if (
        shutil.which("mount") is None
        or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)]).returncode
    ):
        pytest.skip("cannot mount a small tmpfs here (needs CAP_SYS_ADMIN) to make a real ENOSPC")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def fill(disk: Path, leave: int) -> Path:
    """Fill `disk` up, then free `leave` bytes: the next larger write fits only in part."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    os.truncate(filler, filler.stat().st_size - leave)
    return filler


def test_a_full_disk_leaves_no_torn_line_and_the_lines_are_written_once_there_is_room(small_disk: Path) -> None:
    """A real full disk takes the part of an append that fits, then refuses the rest (ENOSPC). Before, that part
    stayed (8121 bytes of a line without its end) and every later flush of the session's sole writer blamed
    `another process` (ForeignAppend), so the lines were never written; now the file is cut back to where it
    ended, the error is `AppendFailed` (ENOSPC), the line stays queued, and once there is room it is written
    whole, once."""
    from storage.writequeue import AppendFailed, WriteQueue

    folder = small_disk / "projects" / SHOP
    folder.mkdir(parents=True)
    path = folder / f"{S1}.jsonl"
    path.write_bytes(b'{"type":"tag","tag":"zero","sessionId":"%s"}\n' % S1.encode())
    queue = WriteQueue(interval=None, sole_writer=True)
    queue.put(path, b'{"type":"tag","tag":"one"}\n')
    queue.flush()
    original = path.read_bytes()
    filler = fill(small_disk, 4096)
    line = b'{"type":"tag","tag":"' + b"y" * 10000 + b'"}\n'
    queue.put(path, line)
    with pytest.raises(AppendFailed) as refused:
        queue.flush()
    assert refused.value.errno == errno.ENOSPC and str(path) in str(refused.value)
    assert path.read_bytes() == original
    assert queue.pending == 1
    filler.unlink()
    queue.close()
    assert path.read_bytes() == original + line


def test_rows_written_after_a_refused_flush_come_with_their_last_prompt(tmp_path: Path) -> None:
    """A reply is recorded while the session's file is moved away (the flush is refused), then the file is back
    and the next flush writes the reply. Before, the refused batch's `last-prompt` was counted as written, so the
    retry came without one: the file's last `last-prompt` named the prompt, not the reply (what `list` reports as
    the leaf, and what a turn killed before its close leaves); now it names the reply."""
    import json

    from storage.recorder import SessionRecorder
    from storage.writequeue import Vanished

    work = tmp_path / "work"
    work.mkdir()
    rec = SessionRecorder.create(tmp_path / "config" / "projects", str(work), interval=None)
    prompt = rec.record_prompt("hello")
    rec.flush()
    rec.path.rename(tmp_path / "aside")
    (reply,) = rec.record_assistant({"content": [{"type": "text", "text": "hi"}], "model": "claude-opus-5-5"})
    with pytest.raises(Vanished):
        rec.flush()
    (tmp_path / "aside").rename(rec.path)
    rec.flush()
    rows = [json.loads(line) for line in rec.path.read_bytes().splitlines()]
    assert [(r["type"], r.get("uuid") or r.get("leafUuid")) for r in rows] == [
        ("user", prompt),
        ("last-prompt", prompt),
        ("assistant", reply),
        ("last-prompt", reply),
    ]
    rec.close()


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, projects: Path):  # type: ignore[no-untyped-def]
    await open_session(lsp_client, projects)
    yield
    await lsp_client.shutdown_session()


async def test_a_turn_of_the_server_whose_file_is_made_immutable_fails_clearly_and_the_server_goes_on(
    client: LanguageClient, work: Path, immutable: list[Path], scripted_model: ScriptedModelServer
) -> None:
    """`sessions/runTurn` over stdio whose model's Bash call makes the session's file immutable. Before, the
    client got an internal error (-32603, a traceback in its data) after a second model request; now a RequestFailed
    (-32803) with `data.reason` `write-failed` naming the file, after one request, and once the file is writable
    again the next turn of the same session (same server) is recorded after whole lines."""

    async def turn(params: dict[str, object]) -> dict[str, object]:
        base = {"cwd": str(work), "provider": "anthropic"}
        return to_plain(await client.protocol.send_request_async("sessions/runTurn", {**base, **params}))

    first = await turn({"prompt": "hello"})
    sid, path = str(first["sessionId"]), Path(str(first["path"]))
    immutable.append(path)
    asked = requests_of(scripted_model, sid)
    with pytest.raises(JsonRpcException) as caught:
        await turn({"sessionId": sid, "prompt": f"BASH chattr +i {path}", "tools": ["Bash"]})
    data = to_plain(caught.value.data) or {}
    assert caught.value.code == REQUEST_FAILED and data.get("reason") == "write-failed", (caught.value, data)
    assert str(path) in caught.value.message and "Operation not permitted" in caught.value.message
    assert requests_of(scripted_model, sid) - asked == 1
    subprocess.run(["chattr", "-i", str(path)], check=True)
    held = path.read_bytes()
    assert held.endswith(b"\n")
    again = await turn({"sessionId": sid, "prompt": "after"})
    assert again["text"] == "echo: after"
    assert path.read_bytes().startswith(held)


@pytest.mark.parametrize("gone", ["session file", "project folder"])
def test_a_rename_whose_session_is_moved_away_once_admitted_makes_no_file(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch, gone: str
) -> None:
    """`rename` is admitted, then (before its append) another process moves the session's file or its project
    folder away. Before, the append made the folder and a file holding only the `custom-title` row; now it raises
    `Vanished` and nothing is made."""
    import storage.metadata as metadata
    from storage.writequeue import Vanished

    projects = world["projects"]
    folder = projects / SHOP
    path = folder / f"{S1}.jsonl"
    real_admit = metadata.admit

    def admit_then_move(*args: object, **kwargs: object) -> object:
        admitted = real_admit(*args, **kwargs)  # type: ignore[arg-type]
        (path if gone == "session file" else folder).rename(world["tmp"] / "aside")
        return admitted

    monkeypatch.setattr(metadata, "admit", admit_then_move)
    with pytest.raises(Vanished):
        metadata.rename_session(path, "a title")
    assert not os.path.lexists(path) and (gone == "session file") == folder.is_dir()


@pytest.mark.parametrize("frozen", ["config home", "projects folder"])
def test_a_new_turn_under_an_immutable_folder_is_one_clear_error_and_makes_nothing(
    tmp_path: Path, immutable: list[Path], frozen: str
) -> None:
    """`turn --new` where the config home (the lock and the live-session record go there) or the projects folder
    (the session's folder goes there) is immutable. Before, a traceback and status 1 (PermissionError from the lock's
    folder, or from the session's first append); now one `session-lsp:` line naming the folder that could not be
    written, status 2, no session made and no live-session record left."""
    config, work = tmp_path / "config", tmp_path / "work"
    (config / "projects").mkdir(parents=True)
    work.mkdir()
    if frozen == "projects folder":  # the lock and the record can be written: only the session's folder cannot
        (config / "session-lsp" / "locks").mkdir(parents=True)
        (config / "sessions").mkdir()
    target = config if frozen == "config home" else config / "projects"
    subprocess.run(["chattr", "+i", str(target)], check=True)
    immutable.append(target)
    out = cli(
        "turn", "--new", "--provider", "anthropic", "--cwd", str(work), "--projects-dir", str(config / "projects"),
        "hello",
    )  # fmt: skip
    assert out.returncode == 2, (out.stdout, out.stderr)
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"session-lsp: {target}/"), out.stderr
    assert "Operation not permitted" in lines[0]
    assert tree(config / "projects") == [] and not any((config / "sessions").glob("*"))


@pytest.mark.parametrize("linked", ["session-lsp", "session-lsp/locks"])
def test_a_lock_folder_swapped_for_a_link_out_takes_no_lock_file_out(world: dict[str, Path], linked: str) -> None:
    """The config home's `session-lsp` (or its `locks`) folder is a symlink to a folder outside (planted by a tool
    call, another process). Before, every writer's admission made `<session>.lock` there and wrote its pid and cwd
    into it; now `rename` and `turn` are refused with one line, nothing is made outside, and the session is
    unchanged."""
    projects, outside = world["projects"], world["tmp"] / "outside"
    config = projects.parent
    outside.mkdir()
    link = config / linked
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside, target_is_directory=True)
    path = projects / SHOP / f"{S1}.jsonl"
    before = path.read_bytes()
    for args in (
        ["rename", S1, "a title"],
        ["turn", "--resume", S1, "--provider", "anthropic", "--cwd", str(world["work"]), "hello"],
    ):
        out = cli(*args, "--projects-dir", str(projects))
        assert out.returncode == 2, (args, out.stdout, out.stderr)
        assert out.stderr.count("\n") == 1 and "symbolic link" in out.stderr, (args, out.stderr)
    assert tree(outside) == []
    assert path.read_bytes() == before


def test_the_live_session_registry_swapped_for_a_link_out_gets_no_record(world: dict[str, Path]) -> None:
    """The config home's `sessions` folder (the CLI's registry of live sessions, where a turn puts its `<pid>.json`)
    is a symlink to a folder outside. Before, the turn wrote its record there (`os.replace` by path, which would also
    have replaced an outside file of that name); now it is refused with one line and nothing is made outside; once
    the link is gone the next turn runs (nothing was left held)."""
    projects, outside = world["projects"], world["tmp"] / "outside"
    outside.mkdir()
    (outside / "keep.json").write_text("{}")
    registry = projects.parent / "sessions"
    registry.symlink_to(outside, target_is_directory=True)
    path = projects / SHOP / f"{S1}.jsonl"
    before = path.read_bytes()
    args = ["turn", "--resume", S1, "--provider", "anthropic", "--cwd", str(world["work"]), "--projects-dir"]
    out = cli(*args, str(projects), "hello")
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert out.stderr.count("\n") == 1 and "symbolic link" in out.stderr, out.stderr
    assert tree(outside) == ["keep.json"]
    assert path.read_bytes() == before
    registry.unlink()
    again = cli(*args, str(projects), "hello")
    assert again.returncode == 0, again.stderr
    assert not any(registry.glob("*.json"))  # the record is removed when the turn ends


QUEUE_LEFT_AFTER_A_REFUSED_CLOSE = """
import sys, threading
from pathlib import Path
from storage.recorder import SessionRecorder
from storage.writequeue import Vanished

projects, work, aside = map(Path, sys.argv[1:4])
rec = SessionRecorder.create(projects, str(work))  # the queue's 100 ms timer on, as in a turn
rec.record_prompt("hello")
rec.flush()
rec.path.parent.rename(aside)
rec.record_prompt("WHILE GONE")
try:
    rec.close()
except Vanished:
    print("refused")
aside.rename(rec.path.parent)  # the folder is back, and the session no longer ours
print(sum(t.name == "session-lsp-writequeue" and t.is_alive() for t in threading.enumerate()))
"""


def test_lines_a_refused_close_left_are_never_written_once_the_writer_let_go(tmp_path: Path) -> None:
    """A recorder's close is refused (its folder moved away), so it gives up the session; the folder is then moved
    back and the process ends. Before, the lines still queued stayed with a live timer thread and were written by the
    flush at exit, without any admission (the `WHILE GONE` row: 3 lines, not 2); now they are dropped
    with the admission: the file is as it was, and no timer thread is left (0, was 1)."""
    projects, work, aside = tmp_path / "config" / "projects", tmp_path / "work", tmp_path / "aside"
    work.mkdir()
    run = subprocess.run(
        [sys.executable, "-c", QUEUE_LEFT_AFTER_A_REFUSED_CLOSE, str(projects), str(work), str(aside)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert run.returncode == 0 and run.stdout.split() == ["refused", "0"], (run.stdout, run.stderr)
    (path,) = projects.glob("*/*.jsonl")
    text = path.read_text()
    assert "WHILE GONE" not in text and text.count("\n") == 2, text
