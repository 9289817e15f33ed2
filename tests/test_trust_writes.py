"""Attacks on how we write into a transcript after the path was decided: a hard link that makes a
file outside the projects folder one with a session file, and a project folder swapped for a symlink
while a turn writes (here by the model's own Bash call). Real files, the real `session-lsp` command
line and the scripted test model on loopback; each test checks that nothing outside changed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CORPUS
from treedigest import digest_tree

SHOP = "-Users-me-shop"
S1 = "11111111-1111-4111-8111-111111111111"
LINKED = "88888888-8888-4888-8888-888888888888"
REPO = Path(__file__).resolve().parent.parent


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server.cli", *args], capture_output=True, text=True, cwd=REPO, timeout=120
    )


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    """A projects folder with a real session; outside it a transcript that a session file of the
    projects folder is a hard link of (same file system, so one inode under two names)."""
    projects = tmp_path / "config" / "projects"
    shutil.copytree(CORPUS / "projects", projects)
    outside = tmp_path / "outside"
    outside.mkdir()
    body = (projects / SHOP / f"{S1}.jsonl").read_bytes().replace(S1.encode(), LINKED.encode())
    (outside / "backup.jsonl").write_bytes(body)
    os.link(outside / "backup.jsonl", projects / SHOP / f"{LINKED}.jsonl")
    work = tmp_path / "work"
    work.mkdir()
    return {"projects": projects, "outside": outside, "work": work, "tmp": tmp_path}


def test_no_write_goes_through_a_hard_link_to_a_file_outside(world: dict[str, Path]) -> None:
    projects, outside = world["projects"], world["outside"]
    before = digest_tree(outside)
    for args in (
        ["rename", LINKED, "pwned"],
        ["tag", LINKED, "pwned"],
        ["turn", "--resume", LINKED, "--provider", "anthropic", "--cwd", str(world["work"]), "hello"],
    ):
        out = cli(*args, "--projects-dir", str(projects))
        assert out.returncode == 2, (args, out.stdout, out.stderr)
        assert out.stderr.count("\n") == 1 and "hard link" in out.stderr, (args, out.stderr)
    assert digest_tree(outside) == before
    # reading it is still fine: the bytes are the same under either name
    out = cli("chain", LINKED, "--projects-dir", str(projects), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["sessionId"] == LINKED


def test_a_project_folder_swapped_for_a_symlink_during_a_turn_takes_no_write_out(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model's Bash call moves the session's project folder away and puts a symlink to a folder
    outside in its place; the rows the turn writes after the call must not land outside."""
    # the Bash call stands for another process acting during the turn: it runs unconfined
    monkeypatch.setenv("SESSION_LSP_BASH_SANDBOX", "off")
    projects, work = world["projects"], world["work"]
    elsewhere = world["tmp"] / "elsewhere"
    folder = projects / SHOP
    moved = projects / "moved-away"
    swap = f"mv {folder} {moved} && mkdir {elsewhere} && ln -s {elsewhere} {folder}"
    before = (folder / f"{S1}.jsonl").read_bytes()
    out = cli(
        "turn", "--resume", S1, "--provider", "anthropic", "--allow", "Bash", "--cwd", str(work),
        "--projects-dir", str(projects), f"BASH {swap}",
    )  # fmt: skip
    assert folder.is_symlink() and moved.is_dir(), ("the Bash call did not run", out.returncode, out.stdout, out.stderr)
    assert sorted(elsewhere.iterdir()) == [], (out.returncode, out.stderr)
    assert out.returncode == 2, (out.stdout, out.stderr)
    last = out.stderr.splitlines()[-1]  # after the progress line of the Bash call
    assert last.startswith("session-lsp: ") and "symbolic link" in last, out.stderr
    after = (moved / f"{S1}.jsonl").read_bytes()
    assert after.startswith(before)  # what was written before the swap stays, whole lines only
    assert after.endswith(b"\n")


@pytest.mark.parametrize("swap", ["hard link", "fifo", "symlink"])
def test_a_session_file_swapped_between_two_appends_keeps_its_lines_queued(world: dict[str, Path], swap: str) -> None:
    """Between two flushes of a turn's write queue the session file is replaced by a hard link of a
    file outside, a FIFO or a symlink: the append is refused, the outside file is unchanged, the
    lines stay queued, and once the real file is back they are written, nothing lost."""
    from storage.access import resolve_target
    from storage.errors import SessionLspError
    from storage.writequeue import WriteQueue

    projects, outside = world["projects"], world["outside"]
    path = resolve_target(projects, session_id=S1, access="write")
    queue = WriteQueue(interval=None)
    queue.put(path, b'{"type":"tag","tag":"one"}\n')
    queue.flush()
    original = path.read_bytes()
    path.rename(path.with_name("kept-aside"))
    if swap == "hard link":
        os.link(outside / "backup.jsonl", path)
    elif swap == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(outside / "backup.jsonl")
    before = digest_tree(outside)
    queue.put(path, b'{"type":"tag","tag":"two"}\n')
    with pytest.raises(SessionLspError):
        queue.flush()
    assert queue.pending == 1
    assert digest_tree(outside) == before
    path.unlink()
    path.with_name("kept-aside").rename(path)
    queue.close()
    assert path.read_bytes() == original + b'{"type":"tag","tag":"two"}\n'


def test_a_subagent_folder_swapped_for_a_symlink_takes_neither_its_rows_nor_its_meta_out(tmp_path: Path) -> None:
    """A subagent's files are decided when it starts; its `<session>/subagents` folder is then
    replaced by a symlink to a folder outside before its first row: neither the `.meta.json` sidecar
    nor the rows may land there."""
    from storage.errors import SessionLspError
    from storage.recorder import SessionRecorder

    projects, work, outside = tmp_path / "config" / "projects", tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    rec = SessionRecorder.create(projects, str(work), interval=None)
    rec.record_prompt("hello")
    rec.flush()
    sub = rec.record_subagent("a0123456789abcdef", description="look around")
    folder = sub.path.parent
    folder.mkdir(parents=True)
    folder.rename(tmp_path / "moved")
    folder.symlink_to(outside, target_is_directory=True)
    with pytest.raises(SessionLspError):
        sub.record_prompt("inside the subagent")
        rec.flush()
    assert sorted(outside.iterdir()) == []


def test_a_project_folder_swapped_for_a_link_out_while_a_store_session_is_written_takes_nothing_out(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store session written into the projects folder (`store_materialize.write_files`): its project folder
    swapped for a link to an outside folder just after the path was decided. Before, the file was written through
    the link (the session's rows appeared outside); now the write walks the folder following no link: Unsafe,
    nothing written anywhere."""
    import storage.store_materialize as materialize
    from storage.errors import Unsafe

    projects, outside = world["projects"], world["outside"]
    fresh = "77777777-7777-4777-8777-777777777777"
    target = projects / SHOP / f"{fresh}.jsonl"
    real_resolve = materialize.resolve_target

    def resolve_then_swap(*args: object, **kwargs: object) -> Path:
        decided = real_resolve(*args, **kwargs)  # type: ignore[arg-type]
        (projects / SHOP).rename(world["tmp"] / "moved")
        (projects / SHOP).symlink_to(outside, target_is_directory=True)
        return decided

    monkeypatch.setattr(materialize, "resolve_target", resolve_then_swap)
    before = digest_tree(outside)
    with pytest.raises(Unsafe):
        materialize.write_files(projects, {target: b'{"type":"user","sessionId":"%s"}\n' % fresh.encode()})
    assert digest_tree(outside) == before
    assert not (world["tmp"] / "moved" / target.name).exists()


@pytest.mark.parametrize("gone", ["file", "folder"])
@pytest.mark.parametrize("known", ["appended before", "resumed"])
def test_a_session_file_that_vanishes_between_two_appends_is_never_made_again(
    tmp_path: Path, gone: str, known: str
) -> None:
    """A file the queue wrote before (or was told exists: a resumed session) is moved away, or its folder is,
    between two flushes: the queue makes neither the folder nor the file again (a new file would hold only the
    rows after the loss, their parents missing), reports `Vanished`, keeps the lines queued, and writes them once
    the file is back. Before, the folder (0700) and a file holding only the later rows were made."""
    from storage.writequeue import Vanished, WriteQueue

    folder = tmp_path / "projects" / SHOP
    folder.mkdir(parents=True)
    path = folder / f"{S1}.jsonl"
    path.write_bytes(b'{"type":"tag","tag":"zero"}\n')
    queue = WriteQueue(interval=None, sole_writer=True)
    if known == "resumed":
        queue.expect(path)
    else:
        queue.put(path, b'{"type":"tag","tag":"one"}\n')
        queue.flush()
    original = path.read_bytes()
    aside = tmp_path / "aside"
    (folder if gone == "folder" else path).rename(aside)
    queue.put(path, b'{"type":"tag","tag":"two"}\n')
    with pytest.raises(Vanished, match="moved or deleted"):
        queue.flush()
    assert not (folder if gone == "folder" else path).exists()
    assert queue.pending == 1
    aside.rename(folder if gone == "folder" else path)
    queue.close()
    assert path.read_bytes() == original + b'{"type":"tag","tag":"two"}\n'


def test_a_project_folder_moved_away_during_a_turn_is_not_made_again(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model's Bash call moves the resumed session's project folder away (nothing in its place): the turn's
    later rows are refused with a clear error, no folder or file is made in its place, and the moved file keeps
    what was written before, in whole lines (the swap test above raced with this on a loaded machine: the
    write queue's timer made the folder again between the `mv` and the `ln`)."""
    # the Bash call stands for another process acting during the turn: it runs unconfined
    monkeypatch.setenv("SESSION_LSP_BASH_SANDBOX", "off")
    projects, work = world["projects"], world["work"]
    folder = projects / SHOP
    moved = projects / "moved-away"
    before = (folder / f"{S1}.jsonl").read_bytes()
    out = cli(
        "turn", "--resume", S1, "--provider", "anthropic", "--allow", "Bash", "--cwd", str(work),
        "--projects-dir", str(projects), f"BASH mv {folder} {moved}",
    )  # fmt: skip
    assert moved.is_dir(), ("the Bash call did not run", out.returncode, out.stdout, out.stderr)
    assert not folder.exists(), sorted(folder.iterdir())
    assert out.returncode == 2, (out.stdout, out.stderr)
    last = out.stderr.splitlines()[-1]
    assert last.startswith("session-lsp: ") and "moved or deleted" in last, out.stderr
    after = (moved / f"{S1}.jsonl").read_bytes()
    assert after.startswith(before) and after.endswith(b"\n")


def test_a_session_file_deleted_before_a_rename_is_written_is_not_made_again(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`rename`/`tag` append one metadata row to a session file they found; the file is moved away between that
    check and the append (here inside the admission, the last step before it): the row is refused, and no file
    holding only that row is made under the session's name (before, one was: a session of one title row)."""
    import contextlib

    import storage.metadata as metadata
    from storage.writequeue import Vanished

    path = world["projects"] / SHOP / f"{S1}.jsonl"
    real_admit = metadata.admit

    @contextlib.contextmanager
    def admit_then_move(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        with real_admit(*args, **kwargs):  # type: ignore[arg-type]
            path.rename(world["tmp"] / "kept-aside.jsonl")
            yield

    monkeypatch.setattr(metadata, "admit", admit_then_move)
    with pytest.raises(Vanished):
        metadata.append_metadata(path, {"type": "custom-title", "customTitle": "renamed"})
    assert not path.exists()
