"""A file or a folder of a store mirror or of a store session being written swapped, at the very open, for a link
out of the folder (a symlink, or a hard link of an outside file): real files, the swap made deterministic by
running it from `os.open` when the write first opens anything at or below the swapped path (after every check the
code makes). The outside marker's bytes never change, nothing is written outside, and the write ends in a clear
error (`Unsafe`; the mirror logs it and does not mirror the session)."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from swapopen import swap_at_open
from treedigest import digest_tree

from storage.errors import Unsafe
from storage.pgstore import StreamTail
from storage.store_materialize import StoreSession, session_files, write_files
from storage.store_mirror import StoreMirror

PROJECT = "-work-proj"
SID = "0b8e6bd1-6a2b-4a47-9f5e-1f0ad2a41c11"
MTIME = 1_700_000_000_000


def row(n: int) -> dict[str, Any]:
    return {"type": "user", "uuid": f"u{n}", "sessionId": SID, "n": n}


def tail(start: int, *numbers: int, stream: int = 1) -> StreamTail:
    return StreamTail(SID, "", stream, MTIME + start, start, [row(n) for n in numbers])


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    tmp = Path(os.path.realpath(tmp_path))
    outside = tmp / "outside"
    outside.mkdir()
    return {"tmp": tmp, "outside": outside, "moved": tmp / "moved"}


def folder_for_link(folder: Path, world: dict[str, Path]) -> Callable[[], None]:
    def swap() -> None:
        if folder.exists():
            folder.rename(world["moved"])
        folder.symlink_to(world["outside"], target_is_directory=True)

    return swap


def file_for_hard_link(file: Path, marker: Path) -> Callable[[], None]:
    def swap() -> None:
        file.unlink()
        os.link(marker, file)

    return swap


def test_a_mirror_folder_swapped_for_a_link_out_at_an_append_takes_nothing_out(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Before, `_append` checked the folder then opened the file by path: the rows went to the outside file of the
    same name and length."""
    mirror = StoreMirror(world["tmp"] / "mirror")
    mirror.apply(PROJECT, [SID], [tail(0, 1)])
    file = mirror.root / PROJECT / f"{SID}.jsonl"
    (world["outside"] / file.name).write_bytes(file.read_bytes())
    before = digest_tree(world["outside"])
    seen = swap_at_open(monkeypatch, file.parent, folder_for_link(file.parent, world))
    with caplog.at_level(logging.WARNING, logger="storage.store_mirror"):
        mirror.apply(PROJECT, [SID], [tail(1, 2)])
    assert seen
    assert digest_tree(world["outside"]) == before
    assert (world["moved"] / file.name).read_bytes().count(b"\n") == 1
    assert "not mirrored" in caplog.text and "symbolic link" in caplog.text, caplog.text


def test_a_mirror_file_swapped_for_a_hard_link_of_an_outside_file_at_an_append_is_not_written(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Before, the append went into the outside file through its second name."""
    mirror = StoreMirror(world["tmp"] / "mirror")
    mirror.apply(PROJECT, [SID], [tail(0, 1)])
    file = mirror.root / PROJECT / f"{SID}.jsonl"
    marker = world["outside"] / "marker.jsonl"
    marker.write_bytes(file.read_bytes())
    before = digest_tree(world["outside"])
    seen = swap_at_open(monkeypatch, file, file_for_hard_link(file, marker))
    with caplog.at_level(logging.WARNING, logger="storage.store_mirror"):
        mirror.apply(PROJECT, [SID], [tail(1, 2)])
    assert seen
    assert digest_tree(world["outside"]) == before
    assert "not mirrored" in caplog.text and "hard link" in caplog.text, caplog.text


@pytest.mark.parametrize("first", [True, False], ids=["new-file", "rewritten-file"])
def test_a_mirror_folder_swapped_for_a_link_out_at_a_whole_write_takes_nothing_out(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, first: bool
) -> None:
    """Before, `_put` created the new file (or its temporary file, then renamed it over the old one) by path after
    its check: the session's file appeared in (or replaced the file of the same name in) the outside folder."""
    mirror = StoreMirror(world["tmp"] / "mirror")
    folder = mirror.root / PROJECT
    if first:
        folder.mkdir()
    else:
        mirror.apply(PROJECT, [SID], [tail(0, 1)])
        (world["outside"] / f"{SID}.jsonl").write_bytes(b"outside\n")
    before = digest_tree(world["outside"])
    seen = swap_at_open(monkeypatch, folder, folder_for_link(folder, world))
    with caplog.at_level(logging.WARNING, logger="storage.store_mirror"):
        mirror.apply(PROJECT, [SID], [tail(0, 1, 2, stream=7)])  # a new stream: written whole
    assert seen
    assert digest_tree(world["outside"]) == before
    assert "not mirrored" in caplog.text and "symbolic link" in caplog.text, caplog.text


def store_session_world(world: dict[str, Path]) -> tuple[Path, Path, bytes]:
    """A projects folder holding the store session's file already (the same bytes)."""
    projects = world["tmp"] / "projects"
    files = session_files(StoreSession(PROJECT, SID, [row(1)]))
    (rel, data), *_ = files.items()
    (projects / rel).parent.mkdir(parents=True)
    (projects / rel).write_bytes(data)
    return projects, projects / rel, data


def test_a_project_folder_swapped_for_a_link_out_is_never_read_when_comparing_a_store_session(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`write_files` first compares a file already there with the data (`_held`). Before, that open by path followed
    the project folder swapped for a link: the outside file of the same bytes was taken for the session, and the
    write 'succeeded' with the session nowhere in the projects folder."""
    projects, file, data = store_session_world(world)
    (world["outside"] / file.name).write_bytes(data)
    before = digest_tree(world["outside"])
    seen = swap_at_open(monkeypatch, file.parent, folder_for_link(file.parent, world))
    with pytest.raises(Unsafe, match="symbolic link"):
        write_files(projects, {file: data})
    assert seen
    assert digest_tree(world["outside"]) == before


def test_a_store_session_file_swapped_for_a_hard_link_of_an_outside_file_is_never_read(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, `_held` read the outside file's bytes through its second name and took it for the session."""
    projects, file, data = store_session_world(world)
    marker = world["outside"] / "backup.jsonl"
    marker.write_bytes(data)
    before = digest_tree(world["outside"])
    seen = swap_at_open(monkeypatch, file, file_for_hard_link(file, marker))
    with pytest.raises(Unsafe, match="hard link"):
        write_files(projects, {file: data})
    assert seen
    assert digest_tree(world["outside"]) == before


@pytest.mark.parametrize("kind", ["symlink", "hard link"])
def test_a_link_planted_as_the_temporary_file_is_never_written_through(world: dict[str, Path], kind: str) -> None:
    """The temporary name a session is written under first (`.<name>.tmp`) planted as a link to an outside file:
    never followed, never truncated; nothing written."""
    projects = world["tmp"] / "projects"
    (projects / PROJECT).mkdir(parents=True)
    files = {projects / rel: data for rel, data in session_files(StoreSession(PROJECT, SID, [row(1)])).items()}
    main = projects / PROJECT / f"{SID}.jsonl"
    marker = world["outside"] / "marker"
    marker.write_bytes(b"outside bytes\n")
    planted = main.with_name(f".{main.name}.tmp")
    if kind == "symlink":
        planted.symlink_to(marker)
    else:
        os.link(marker, planted)
    before = digest_tree(world["outside"])
    with pytest.raises(Unsafe, match="temporary file"):
        write_files(projects, files)
    assert digest_tree(world["outside"]) == before
    assert not main.exists()


@pytest.mark.timeout(60)
def test_a_mirror_file_swapped_for_a_fifo_at_an_append_is_refused_at_once(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Before, `_append` opened the file by path for writing without O_NONBLOCK: a FIFO no one reads, swapped in
    after its check, held the mirror's thread for ever (this test stopped at its timeout). Now: refused at once as
    not a regular file, the session not mirrored."""
    mirror = StoreMirror(world["tmp"] / "mirror")
    mirror.apply(PROJECT, [SID], [tail(0, 1)])
    file = mirror.root / PROJECT / f"{SID}.jsonl"

    def swap() -> None:
        file.unlink()
        os.mkfifo(file, 0o600)

    seen = swap_at_open(monkeypatch, file, swap)
    with caplog.at_level(logging.WARNING, logger="storage.store_mirror"):
        mirror.apply(PROJECT, [SID], [tail(1, 2)])
    assert seen
    assert stat.S_ISFIFO(os.lstat(file).st_mode)
    assert "not mirrored" in caplog.text and "not a regular file" in caplog.text, caplog.text
