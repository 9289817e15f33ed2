"""A file whose size, mtime and change time are unchanged is taken as unchanged without reading its head, when it
was read long after its last change (as the index database takes it); a file read soon after a change is still
fingerprinted, since a same-size rewrite may keep the same mtime tick; a rewrite whose mtime was put back is read
again (its change time moved)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import age

from server.index import ProjectIndex

CORPUS = Path(__file__).resolve().parent / "corpus" / "claude-code-2.1.328" / "projects"
SHOP = "-Users-me-shop"
PAR = "11111111-1111-4111-8111-111111111111"


@pytest.fixture
def path(tmp_path: Path) -> Path:
    dest = tmp_path / "projects"
    shutil.copytree(CORPUS, dest)
    return dest / SHOP / f"{PAR}.jsonl"


def rewrite_head_keeping_size_and_mtime(path: Path) -> None:
    """The first row's uuid changed in place (same length); the mtime set back to what it was."""
    st = path.stat()
    data = path.read_bytes()
    at = data.index(b'"uuid":"') + len(b'"uuid":"')
    path.write_bytes(data[:at] + b"0" * 8 + data[at + 8 :])
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def first_uuid(idx: ProjectIndex, path: Path) -> str | None:
    return next(r.uuid for r in idx.files[path].transcript.rows if r.uuid)


def watch_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths whose bytes the index reads from now on: its rewrite check, a database's head digest, a parse."""
    import server.index.filestate as filestate
    import storage.indexdb as indexdb

    seen: list[str] = []
    for module, name in ((filestate, "fingerprint"), (filestate, "read_transcript"), (indexdb, "head_digest")):
        real = getattr(module, name)

        def spy(p: Path, *args: object, _real: object = real) -> object:
            seen.append(str(p))
            return _real(p, *args)  # type: ignore[operator]

        monkeypatch.setattr(module, name, spy)
    return seen


def settled_index(path: Path, persist: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ProjectIndex:
    """An index of the folder holding `path`, scanned once `path` was last written an hour ago."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    age(path)
    idx = ProjectIndex(path.parent.parent, persist=persist)
    idx.scan()
    return idx


@pytest.mark.parametrize("persist", [False, True])
def test_a_settled_file_is_not_read_again_when_its_stat_is_unchanged(
    path: Path, persist: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    idx = settled_index(path, persist, tmp_path, monkeypatch)
    reads = watch_reads(monkeypatch)
    idx.update_file(path)
    assert reads == []
    if persist:  # restarted from the database: the same
        idx.close()
        again = ProjectIndex(path.parent.parent)
        again.scan()
        assert str(path) not in reads


@pytest.mark.parametrize("persist", [False, True])
def test_a_rewrite_with_its_mtime_put_back_is_read_again(
    path: Path, persist: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same size, the mtime put back (`touch -r`, `cp -p`): the change time still moved."""
    idx = settled_index(path, persist, tmp_path, monkeypatch)
    assert not first_uuid(idx, path).startswith("00000000")  # type: ignore[union-attr]
    if persist:
        idx.close()
    rewrite_head_keeping_size_and_mtime(path)
    if persist:  # restarted from the database
        idx = ProjectIndex(path.parent.parent)
        idx.scan()
    else:
        idx.update_file(path)
    assert first_uuid(idx, path).startswith("00000000")  # type: ignore[union-attr]


def test_a_file_read_soon_after_a_change_is_fingerprinted(path: Path) -> None:
    os.utime(path)  # modified just now
    idx = ProjectIndex(path.parent.parent, persist=False)
    idx.scan()
    rewrite_head_keeping_size_and_mtime(path)
    idx.update_file(path)
    assert first_uuid(idx, path).startswith("00000000")  # type: ignore[union-attr]
