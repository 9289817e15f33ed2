"""A folder of the cache swapped for a link out, or a cache file for a link to an outside file, between the check
of its folder and the open of the file (made deterministic by running the swap from `os.open` at the first open of
a file, not a folder, below it). Real files; the outside marker's bytes and mode never change and nothing is
written outside."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from swapopen import swap_at_open
from treedigest import digest_tree

from storage.cache import cache_dir, private_file, save_bytes


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    tmp = Path(os.path.realpath(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp / "xdg"))
    monkeypatch.delenv("SESSION_LSP_NO_CACHE", raising=False)
    outside = tmp / "outside"
    outside.mkdir()
    (outside / "marker.json").write_bytes(b'{"outside": true}')
    (outside / "marker.json").chmod(0o644)
    cache = cache_dir()
    assert cache is not None
    return {"tmp": tmp, "outside": outside, "cache": cache}


def test_a_cache_folder_swapped_for_a_link_out_before_a_save_takes_nothing_out(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, `save_bytes` checked the folder (`private_dir`) then made its temporary file and renamed it by path:
    the answer landed in the outside folder. Now the file is made in the folder walked once by descriptor: the data
    lands in the real folder (moved away by the swap), never outside."""
    folder = world["cache"] / "answers"
    folder.mkdir(parents=True)
    moved = world["tmp"] / "moved"

    def swap() -> None:
        folder.rename(moved)
        folder.symlink_to(world["outside"], target_is_directory=True)

    before = digest_tree(world["outside"], modes=True)
    seen = swap_at_open(monkeypatch, folder, swap, files_only=True)
    saved = save_bytes(folder / "k.json", b'{"answer": 1}')
    assert seen
    assert digest_tree(world["outside"], modes=True) == before
    assert not (world["outside"] / "k.json").exists()
    assert not saved or (moved / "k.json").read_bytes() == b'{"answer": 1}'
    assert sorted(p.name for p in moved.iterdir()) == (["k.json"] if saved else [])  # no temporary file left


def test_a_cache_database_swapped_for_a_link_to_an_outside_file_is_refused_and_left_alone(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, `private_file` opened the database by path with O_CREAT following a link swapped in for it, and
    made the outside file 0600. Now: an OSError naming it, the outside file's bytes and mode unchanged."""
    folder = world["cache"]
    folder.mkdir(parents=True)
    db = folder / "index.sqlite3"
    db.write_bytes(b"")

    def swap() -> None:
        db.unlink()
        db.symlink_to(world["outside"] / "marker.json")

    before = digest_tree(world["outside"], modes=True)
    seen = swap_at_open(monkeypatch, folder, swap, files_only=True)
    with pytest.raises(OSError, match="index.sqlite3"):
        private_file(db)
    assert seen
    assert digest_tree(world["outside"], modes=True) == before


def test_a_cache_database_that_is_a_hard_link_of_an_outside_file_is_refused(world: dict[str, Path]) -> None:
    """A hard link of an outside file in place of the database: before, made 0600 (and then used by SQLite, which
    would write into the outside file); now an OSError and the outside file left alone."""
    world["cache"].mkdir(parents=True)
    db = world["cache"] / "index.sqlite3"
    os.link(world["outside"] / "marker.json", db)
    before = digest_tree(world["outside"], modes=True)
    with pytest.raises(OSError, match="one name"):
        private_file(db)
    assert digest_tree(world["outside"], modes=True) == before


def test_the_store_mirrors_folder_swapped_for_a_link_out_makes_no_mirror_outside(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`new_mirror_base` makes this process's mirror folder in `<cache>/store-mirrors`. Before, it checked the
    folder (`private_dir`) then made the new folder by path: one swapped for a link just before the `mkdir` put the
    mirror (and every store session it would hold) in the outside folder. Now it is made by name in the folder
    opened by descriptor: in the real folder (moved away by the swap), nothing outside."""
    from server.index.storefeed import new_mirror_base

    parent = world["cache"] / "store-mirrors"
    parent.mkdir(parents=True)
    moved = world["tmp"] / "moved"
    real_mkdir = os.mkdir
    seen: list[str] = []

    def mkdir(path: Any, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        text = os.fspath(path)
        full = os.path.abspath(os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), text) if dir_fd else text)
        if not seen and full.startswith(f"{parent}/"):
            seen.append(full)
            parent.rename(moved)
            parent.symlink_to(world["outside"], target_is_directory=True)
        real_mkdir(path, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "mkdir", mkdir)
    before = digest_tree(world["outside"], modes=True)
    base = new_mirror_base()
    assert seen
    assert sorted(p.name for p in world["outside"].iterdir()) == ["marker.json"]
    assert digest_tree(world["outside"], modes=True) == before
    assert [p.name for p in moved.iterdir()] == [base.name]


def test_the_answers_folder_swapped_for_a_link_out_before_pruning_removes_nothing_outside(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`server.lsp.answers` keeps the newest 16 answer files and removes the rest. Before, it listed and removed
    them by path: the folder swapped for a link to an outside folder of 21 `.json` files lost the 5 oldest. Now it
    lists and removes through the folder opened by descriptor: the outside files are all there."""
    from server.lsp import answers

    folder = world["cache"] / "answers"
    folder.mkdir(parents=True)
    (folder / "mine.json").write_bytes(b"{}")
    for n in range(20):
        (world["outside"] / f"doc{n:02}.json").write_bytes(b'{"n": %d}' % n)
    moved = world["tmp"] / "moved"
    real_scandir = os.scandir
    seen: list[object] = []

    def scandir(path: Any = ".") -> Any:
        if not seen:
            seen.append(path)
            folder.rename(moved)
            folder.symlink_to(world["outside"], target_is_directory=True)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    before = digest_tree(world["outside"], modes=True)
    answers._prune(folder)
    assert seen
    assert digest_tree(world["outside"], modes=True) == before
    assert len(before) == 21
    assert [p.name for p in moved.iterdir()] == ["mine.json"]
