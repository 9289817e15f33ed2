"""A memory file is judged by what was opened, not by a look at its path just before.

The memory loader (`server/agent/memory.py`) resolved a file's real path, checked it (not in `/proc` or `/sys`; an
import of a checkout inside the working directory unless approved), then opened the path again. A checkout's folder
swapped for a symbolic link between the check and the open (a process of the checkout's owner flipping it, as a
build script or a `git checkout` running beside the turn would) had the file read where the link led: another
process's `/proc/<pid>/environ` (its secrets, into the prompt and the transcript), or a file outside the working
directory though external imports were never approved. The decision is now made on the opened descriptor's real path
(`storage.fileopen.read_small_opened`).

A real process swaps a folder of the checkout with a link, atomically (`renameat2(RENAME_EXCHANGE)`), as fast as it
can, while the loader reads the memory over and over. Before, the secret was read within 42 loads (6 runs of each
test), and some loads failed outright: `os.path.realpath` raised EINVAL when the folder it had seen as a link was a
folder again when it read the link, which ended the turn.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from server.agent.memory import load_memory

SECRET = "SECRET-MARKER-NOT-FOR-THE-MODEL"
LOADS = 3000
"""Memory loads raced against the swapping process (before the fix, one read the secret within 42)."""

SWAPPER = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
a, b = (os.fsencode(p) for p in sys.argv[1:3])
print("ready", flush=True)
while True:
    if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0:
        sys.exit(ctypes.get_errno())
"""


def _swapping(folder: Path, link_to: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    """A process that keeps exchanging `folder` (a real folder) with a link to `link_to`."""
    link = folder.with_name(folder.name + ".link")
    link.symlink_to(link_to)
    proc = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(folder), str(link)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    return proc


def _race(app: Path, swapper: subprocess.Popen[str]) -> list[str]:
    """What `LOADS` memory loads (or 60 s) raced against the swapper took in that they should not have: a text holding
    the secret, or an error (a load that fails ends the turn)."""
    wrong: list[str] = []
    deadline = time.monotonic() + 60
    try:
        for _ in range(LOADS):
            try:
                wrong += [f.content for f in load_memory(app) if SECRET in f.content]
            except OSError as exc:  # before: os.path.realpath's EINVAL (a link when looked at, none when read)
                wrong.append(repr(exc))
            if any(SECRET in w for w in wrong) or time.monotonic() > deadline:
                break
            assert swapper.poll() is None, "the swapping process stopped"
    finally:
        swapper.kill()
        swapper.wait()
    return wrong


@pytest.fixture
def app(tmp_path: Path) -> Path:
    app = tmp_path / "app"
    (app / "docs").mkdir(parents=True)
    (app / "docs" / "environ").write_text("HARMLESS-NOTES")
    (app / "CLAUDE.md").write_text("PROJECT-MEMORY @docs/environ")
    return app


def test_a_folder_swapped_for_a_link_into_proc_is_not_read(app: Path, private_home: Path) -> None:
    config = Path(os.environ["CLAUDE_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    # imports from outside the project approved: only the rule on the kernel's files stands in the way
    project = {"hasClaudeMdExternalIncludesApproved": True}
    (config / ".claude.json").write_text(json.dumps({"projects": {str(app): project}}))
    # the link leads to the folder in /proc of a process whose environment holds the secret
    holder = subprocess.Popen(["sleep", "600"], env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "KEY": SECRET})
    try:
        swapper = _swapping(app / "docs", Path(f"/proc/{holder.pid}"), dict(os.environ))
        wrong = _race(app, swapper)
    finally:
        holder.kill()
        holder.wait()
    assert wrong == []  # before: that process's environment, the secret with it (within 0 to 42 loads in 6 runs)


def test_a_folder_swapped_for_a_link_out_of_the_checkout_is_not_imported(
    app: Path, private_home: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "environ").write_text(f"OUTSIDE {SECRET}")  # say, ~/.ssh; external imports not approved
    swapper = _swapping(app / "docs", outside, dict(os.environ))
    assert _race(app, swapper) == []  # before: the outside file, an import never approved (within 0 to 5 loads)


def test_a_deleted_file_reached_through_proc_fd_is_not_read(app: Path, tmp_path: Path) -> None:
    """`/proc/<pid>/fd/N` of a file another process holds open after deleting it opens that file, whose real path, as
    the kernel names it, is `held (deleted)`: here the name of another file. Neither is read: the held file has no
    name of its own (decided on the descriptor: the path the kernel gives must name the same file now), and the file
    of that name is not the one the link leads to (before: read in its place, the old look resolved the link's text).
    Without the check that the name still names the descriptor's file, the deleted secret was read."""
    secret = tmp_path / "held"
    secret.write_text(f"HELD {SECRET}")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, sys, time; fd = os.open(sys.argv[1], os.O_RDONLY); os.unlink(sys.argv[1]); "
            "print(fd, flush=True); time.sleep(600)",
            str(secret),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        fd = int(holder.stdout.readline())
        (app / "CLAUDE.local.md").symlink_to(f"/proc/{holder.pid}/fd/{fd}")
        (tmp_path / "held (deleted)").write_text("a file of the name the kernel gives the deleted one")
        assert not secret.exists() and SECRET in Path(f"/proc/{holder.pid}/fd/{fd}").read_text()
        loaded = load_memory(app)
    finally:
        holder.kill()
        holder.wait()
    assert [f.path.name for f in loaded] == ["CLAUDE.md", "environ"]
    assert not any(SECRET in f.content for f in loaded)
