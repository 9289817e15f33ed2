"""What a writer finds planted under a file's temporary name (`.<name>.tmp`, `storage.wholefile`) when it writes a
store session into a projects folder: a folder, a UNIX socket, a FIFO, or a regular file of another user. Each is a
clear `Unsafe` naming the temporary file; the planted thing is left as it was and no file of the session appears.
(Links planted there: `test_trust_store_swaps`.)"""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from storage.errors import Unsafe
from storage.store_materialize import StoreSession, session_files, write_files

PROJECT = "-work-proj"
SID = "0b8e6bd1-6a2b-4a47-9f5e-1f0ad2a41c11"
NOBODY = 65534


def plant_folder(at: Path) -> None:
    at.mkdir()
    (at / "inside").write_bytes(b"kept\n")


def plant_socket(at: Path) -> None:
    back = os.getcwd()
    os.chdir(at.parent)  # bound by its name: a socket's whole path must be under 108 bytes
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(at.name)
    finally:
        os.chdir(back)


def plant_fifo(at: Path) -> None:
    os.mkfifo(at)


def plant_other_users_file(at: Path) -> None:
    at.write_bytes(b"planted by another user\n")
    os.chown(at, NOBODY, NOBODY)
    at.chmod(0o666)


PLANTS: dict[str, Callable[[Path], None]] = {
    "folder": plant_folder,
    "socket": plant_socket,
    "fifo": plant_fifo,
    "another user's file": plant_other_users_file,
}


def snapshot(at: Path) -> tuple[int, int, int, bytes | None]:
    st = at.lstat()
    return stat.S_IFMT(st.st_mode), st.st_uid, st.st_ino, at.read_bytes() if stat.S_ISREG(st.st_mode) else None


@pytest.mark.parametrize("kind", list(PLANTS))
def test_anything_but_a_file_of_ours_under_the_temporary_name_is_unsafe_and_left_alone(
    tmp_path: Path, kind: str
) -> None:
    if kind == "another user's file" and os.geteuid() != 0:
        pytest.skip("planting a file of another user takes root")
    projects = tmp_path / "projects"
    (projects / PROJECT).mkdir(parents=True)
    session = StoreSession(PROJECT, SID, [{"type": "user", "uuid": "u1", "sessionId": SID}])
    files = {projects / rel: data for rel, data in session_files(session).items()}
    main = projects / PROJECT / f"{SID}.jsonl"
    planted = main.with_name(f".{main.name}.tmp")
    PLANTS[kind](planted)
    before = snapshot(planted)
    with pytest.raises(Unsafe, match=r"temporary file \.0b8e6bd1-.*\.jsonl\.tmp"):
        write_files(projects, files)
    assert snapshot(planted) == before
    assert sorted(p.name for p in (projects / PROJECT).iterdir()) == [planted.name]


def test_a_file_named_like_a_temporary_name_is_not_written(tmp_path: Path) -> None:
    """`.x.tmp` is the temporary name of `x`: written as a file of its own, the next write of `x` would take it over
    and remove it. Such a name is refused before anything is written; `x` itself is written whole."""
    from storage.errors import InvalidArgument
    from storage.wholefile import put_whole

    folder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(InvalidArgument, match="temporary name"):
            put_whole(folder, ".x.tmp", b"data\n", tmp_path / ".x.tmp", replace=True)
        assert sorted(p.name for p in tmp_path.iterdir()) == []
        put_whole(folder, "x", b"whole\n", tmp_path / "x", replace=True)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["x"] and (tmp_path / "x").read_bytes() == b"whole\n"
    finally:
        os.close(folder)
