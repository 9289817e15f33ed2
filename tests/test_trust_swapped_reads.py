"""Every reader of the projects folder, attacked: a file it found by discovery (or a folder on its way) is swapped
for a symlink to an outside copy holding a marker after discovery and before the read.

The race is made deterministic by the test alone: the reader's own `open_regular` (as its module imported it) is
wrapped so that the first open of the target swaps it, then opens it. Before, a plain open followed the link and the
marker showed in the answer (list titles, search hits, usage totals, the index's rows, the cold fill's uuids); now
every read below a confined projects folder walks it without following a link that leads out (`storage.confined`).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CORPUS, age

import server.index.filestate as filestate
import server.index.fill as fill_module
import storage.access as access
import storage.countcache as countcache
import storage.search as search
import storage.sessions as sessions
import storage.usage as usage
from server.index import ProjectIndex
from storage.errors import Unsafe
from storage.indexdb import IndexDB
from storage.paths import iter_project_dirs

SHOP = "-Users-me-shop"
S1 = "11111111-1111-4111-8111-111111111111"
S2 = "22222222-2222-4222-8222-222222222222"
OTHER = "1c99f271-c426-49f7-9ae1-2b8728ab22c4"
"""A session of another project folder: read whatever was swapped."""
MARKER = "ZEBRAMARKER"
SECRET_UUID = "99999999-9999-4999-8999-999999999999"
SECRET_TOKENS = 987_654_321


def _secret_rows(session_id: str) -> bytes:
    user = {
        "type": "user",
        "parentUuid": None,
        "isSidechain": False,
        "uuid": SECRET_UUID,
        "sessionId": session_id,
        "cwd": "/Users/me/shop",
        "timestamp": "2026-11-29T23:00:00.000Z",
        "message": {"role": "user", "content": f"{MARKER} the outside file was read"},
    }
    reply = {
        "type": "assistant",
        "parentUuid": SECRET_UUID,
        "isSidechain": False,
        "uuid": "98989898-9898-4898-8898-989898989898",
        "sessionId": session_id,
        "cwd": "/Users/me/shop",
        "timestamp": "2026-11-29T23:00:01.000Z",
        "message": {
            "id": "msg_secret",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": f"{MARKER} answered"}],
            "usage": {"input_tokens": SECRET_TOKENS, "output_tokens": 1},
        },
    }
    return b"".join(json.dumps(r).encode() + b"\n" for r in (user, reply))


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """The corpus's projects folder, and outside it a folder named as its project folder holding, under each
    session's name, that session between marker rows (a prompt and a reply first, a custom title last)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    projects = tmp_path / "config" / "projects"
    shutil.copytree(CORPUS / "projects", projects)
    outside = tmp_path / "outside" / SHOP
    outside.mkdir(parents=True)
    for session in (projects / SHOP).glob("*.jsonl"):
        title = b'{"type":"custom-title","customTitle":"%s","sessionId":"%s"}\n' % (
            MARKER.encode(),
            session.stem.encode(),
        )
        (outside / session.name).write_bytes(_secret_rows(session.stem) + session.read_bytes() + title)
    shutil.copytree(projects / SHOP / S2, outside / S2)
    age(projects)
    age(tmp_path / "outside")
    return {"projects": projects, "outside": outside, "tmp": tmp_path}


def _swap(world: dict[str, Path], target: Path, what: str) -> None:
    """`target` (`what="file"`) or its project folder (`"folder"`) replaced by a symlink to the outside copy."""
    projects, outside = world["projects"], world["outside"]
    if what == "file" and not target.is_symlink():
        target.rename(world["tmp"] / f"moved-{target.name}")
        target.symlink_to(outside / target.relative_to(projects / SHOP))
    elif what == "folder" and not (projects / SHOP).is_symlink():
        (projects / SHOP).rename(world["tmp"] / "moved-project")
        (projects / SHOP).symlink_to(outside, target_is_directory=True)


def swapping_at_open(
    monkeypatch: pytest.MonkeyPatch, module: Any, world: dict[str, Path], target: Path, what: str, name: str
) -> list[Path]:
    """`module.<name>` (its `open_regular`) swapped so that opening `target` first swaps it; the paths it opened."""
    real: Callable[..., Any] = getattr(module, name)
    opened: list[Path] = []

    def swap_then_open(path: Path | str, *args: Any, **kwargs: Any) -> Any:
        opened.append(Path(path))
        if Path(path) == target:
            _swap(world, target, what)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(module, name, swap_then_open)
    return opened


WHAT = ["file", "folder"]


@pytest.mark.parametrize("what", WHAT)
def test_the_listing_never_shows_a_file_swapped_after_discovery(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    target = world["projects"] / SHOP / f"{S1}.jsonl"
    opened = swapping_at_open(monkeypatch, sessions, world, target, what, "open_regular")
    swapping_at_open(monkeypatch, countcache, world, target, what, "open_regular")
    listed = sessions.list_sessions(world["projects"])
    assert target in opened and (target.is_symlink() or target.parent.is_symlink())
    answer = json.dumps([s.to_json() for s in listed])
    assert MARKER not in answer
    assert OTHER in answer  # the rest is listed


@pytest.mark.parametrize("what", WHAT)
def test_search_never_indexes_a_file_swapped_after_discovery(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    target = world["projects"] / SHOP / f"{S1}.jsonl"
    opened = swapping_at_open(monkeypatch, search, world, target, what, "open_regular")
    index = search.SearchIndex.open(world["tmp"] / "search")
    try:
        index.update(world["projects"])
        assert target in opened
        hits = index.search(MARKER, projects_dir=world["projects"])
        assert [h.to_json() for h in hits] == []
        assert index.search("another project", projects_dir=world["projects"])  # the rest is searched
    finally:
        index.close()


@pytest.mark.parametrize("what", WHAT)
def test_usage_never_counts_a_file_swapped_after_discovery(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    target = world["projects"] / SHOP / f"{S1}.jsonl"
    opened = swapping_at_open(monkeypatch, usage, world, target, what, "open_regular")
    responses = usage.folder_responses(world["projects"])
    assert target in opened
    tokens = [r.input_tokens for r in responses]
    assert responses and SECRET_TOKENS not in tokens
    assert "msg_secret" not in repr(responses)


@pytest.mark.parametrize("what", WHAT)
def test_the_index_never_reads_a_file_swapped_after_discovery(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    target = world["projects"] / SHOP / f"{S1}.jsonl"
    opened = swapping_at_open(monkeypatch, filestate, world, target, what, "open_regular")
    index = ProjectIndex(world["projects"], persist=False)
    index.scan()
    assert target in opened
    assert index.find_uuid(SECRET_UUID) == []
    rows = [r.uuid for state in index.files.values() for r in state.transcript.rows]
    assert SECRET_UUID not in rows and any(p.stem == OTHER for p in index.files)


@pytest.mark.parametrize("what", WHAT)
def test_the_cold_fills_workers_never_read_a_file_swapped_after_discovery(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    index = ProjectIndex(world["projects"], persist=False)
    paths = list(index.discover())
    target = world["projects"] / SHOP / f"{S1}.jsonl"
    assert target in paths
    swapping_at_open(monkeypatch, filestate, world, target, what, "open_regular")  # inherited by the forked workers
    db = IndexDB.open(world["tmp"] / "db")
    assert db is not None
    with db:
        result = fill_module.fill(db, world["projects"], paths, workers=2, listing=True)
    assert target.is_symlink() or target.parent.is_symlink()  # a worker swapped it
    read = {Path(f): [u for u, _ in pairs] for f, pairs in result.uuids}
    assert all(SECRET_UUID not in uuids for uuids in read.values())
    assert any(p.stem == OTHER for p in read) and MARKER not in json.dumps(result.reports)


def test_a_subagent_folder_swapped_after_discovery_shows_no_outside_sidecar(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The listing's subagent entries read each `.meta.json` (never through a link); the folder holding it swapped
    for a link to an outside folder with a marked sidecar after discovery is not followed either."""
    subagents = world["projects"] / SHOP / S2 / "subagents"
    meta = next(subagents.rglob("*.meta.json"))
    outside_subagents = world["outside"] / S2 / "subagents"
    (outside_subagents / meta.relative_to(subagents)).write_text(
        json.dumps({"agentType": MARKER, "description": MARKER}), encoding="utf-8"
    )
    real = sessions.read_sidecar

    def swap_then_read(path: Path | str, *args: Any) -> bytes | None:
        if not subagents.is_symlink():
            subagents.rename(world["tmp"] / "moved-subagents")
            subagents.symlink_to(outside_subagents, target_is_directory=True)
        return real(path, *args)

    monkeypatch.setattr(sessions, "read_sidecar", swap_then_read)
    listed = sessions.list_sessions(world["projects"])
    assert subagents.is_symlink()
    answer = json.dumps([s.to_json() for s in listed])
    assert MARKER not in answer
    assert S2 in answer


def test_a_link_inside_the_projects_folder_is_still_followed(world: dict[str, Path]) -> None:
    """What discovery accepts is kept: a session file that is a link to a file inside the projects folder is read."""
    other = world["projects"] / "-Users-me-other"
    target = world["projects"] / SHOP / f"{S1}.jsonl"
    linked = other / "55555555-5555-4555-8555-555555555555.jsonl"
    linked.symlink_to(target)
    index = ProjectIndex(world["projects"], persist=False)
    index.scan()
    assert linked in index.files and index.files[linked].transcript.rows
    assert os.path.samefile(linked, target)


def test_the_projects_folder_itself_swapped_after_discovery_is_not_followed(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The projects folder (not a folder in it) replaced by a link to an outside folder of the same layout once
    discovery listed it: the index reads nothing there."""
    projects, outside_root = world["projects"], world["outside"].parent
    target = projects / SHOP / f"{S1}.jsonl"
    real_open = filestate.open_regular

    def swap_then_open(path: Path | str, *args: Any) -> Any:
        if Path(path) == target and not projects.is_symlink():
            projects.rename(world["tmp"] / "moved-projects")
            projects.symlink_to(outside_root, target_is_directory=True)
        return real_open(path, *args)

    monkeypatch.setattr(filestate, "open_regular", swap_then_open)
    index = ProjectIndex(projects, persist=False)
    index.scan()
    assert projects.is_symlink()
    assert index.find_uuid(SECRET_UUID) == []
    rows = [r.uuid for state in index.files.values() for r in state.transcript.rows]
    assert SECRET_UUID not in rows


def test_a_link_inside_whose_target_is_swapped_for_a_link_out_is_not_followed(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session file linked to another one inside the folder (discovery accepts it) whose target is swapped for a
    link out after discovery: the chain of links now leads out, and is refused as a link out is."""
    target = world["projects"] / SHOP / f"{S1}.jsonl"
    linked = world["projects"] / "-Users-me-other" / "55555555-5555-4555-8555-555555555555.jsonl"
    linked.symlink_to(target)
    real_open = filestate.open_regular

    def swap_then_open(path: Path | str, *args: Any) -> Any:
        if Path(path) == linked:
            _swap(world, target, "file")
        return real_open(path, *args)

    monkeypatch.setattr(filestate, "open_regular", swap_then_open)
    index = ProjectIndex(world["projects"], persist=False)
    index.scan()
    assert target.is_symlink()
    assert index.find_uuid(SECRET_UUID) == []
    assert linked not in index.files or SECRET_UUID not in [r.uuid for r in index.files[linked].transcript.rows]


def test_the_decisions_own_read_of_the_head_follows_no_link_swapped_in_after_resolving(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`resolve_target` resolves the path, then reads its first rows to decide: the project folder swapped for a
    link out in between is refused (`Unsafe`) instead of deciding on the outside file's rows."""
    target = world["projects"] / SHOP / f"{S1}.jsonl"
    resolved = Path(os.path.realpath(target))
    real_is_inside = access.is_inside

    def swap_after_resolving(root: Path, real: Path) -> bool:
        if real == resolved:
            _swap(world, target, "folder")
        return real_is_inside(root, real)

    monkeypatch.setattr(access, "is_inside", swap_after_resolving)
    with pytest.raises(Unsafe, match="symbolic link"):
        decided = access.resolve_target(world["projects"], path=target)
        pytest.fail(f"decided {decided} on the outside file's first rows")
    assert target.parent.is_symlink()


@pytest.mark.parametrize("spelling", ["{p}/{s}/{f}", "{p}//{s}/{f}", "{p}/./{s}/{f}", "{p}/{s}/../{s}/{f}"])
def test_a_path_spelled_otherwise_is_confined_all_the_same(world: dict[str, Path], spelling: str) -> None:
    """However a path below the projects folder is written, once the folder was discovered a file swapped for a
    link out is not opened through it."""
    from storage.fileopen import LeadsOut, open_regular

    list(iter_project_dirs(world["projects"]))  # discovery
    target = world["projects"] / SHOP / f"{S1}.jsonl"
    _swap(world, target, "file")
    with pytest.raises(LeadsOut, match="leads out of the projects folder"):
        open_regular(spelling.format(p=world["projects"], s=SHOP, f=target.name)).close()


@pytest.mark.parametrize("through", ["a link to the folder above", "/proc/self/root", "a link to the project folder"])
def test_a_path_reaching_the_projects_folder_through_a_link_is_confined_all_the_same(
    world: dict[str, Path], through: str
) -> None:
    """A path that reaches the discovered projects folder through a link (to a folder above it, `/proc/self/root`,
    or to its project folder) names no confined folder as written: before, it was opened plainly and the file
    swapped for a link out showed the outside rows. Now it is confined as its real spelling; a file there that is
    not a link is read as before."""
    from storage.fileopen import LeadsOut, open_regular, read_small

    list(iter_project_dirs(world["projects"]))  # discovery
    target = world["projects"] / SHOP / f"{S1}.jsonl"
    kept = world["projects"] / SHOP / f"{S2}.jsonl"
    if through == "a link to the folder above":
        (world["tmp"] / "alias").symlink_to(world["projects"].parent, target_is_directory=True)
        folder = f"{world['tmp']}/alias/projects/{SHOP}"
    elif through == "/proc/self/root":
        folder = f"/proc/self/root{world['projects']}/{SHOP}"
    else:
        (world["tmp"] / "alias").symlink_to(world["projects"] / SHOP, target_is_directory=True)
        folder = f"{world['tmp']}/alias"
    _swap(world, target, "file")
    with open_regular(f"{folder}/{kept.name}") as fh:
        assert fh.read() == kept.read_bytes()
    with pytest.raises(LeadsOut, match="leads out of the projects folder"):
        open_regular(f"{folder}/{target.name}").close()
    assert read_small(f"{folder}/{target.name}", 1 << 20, follow_links=True) is None
    assert MARKER.encode() in (world["outside"] / target.name).read_bytes()


def test_a_projects_folder_given_through_a_link_is_read_where_the_link_now_leads(tmp_path: Path) -> None:
    """The projects folder given through a link (`~/.claude/projects` kept on another disk), the link then moved to
    another copy and the folder discovered again: before, the first real path was kept for that spelling for the
    process's life, and the listing found the new copy's file while every read opened the old copy's."""
    from storage.fileopen import open_regular

    for disk, word in (("disk1", b"OLD"), ("disk2", b"NEW")):
        (tmp_path / disk / "projects" / SHOP).mkdir(parents=True)
        (tmp_path / disk / "projects" / SHOP / f"{S1}.jsonl").write_bytes(word + b"\n")
    projects = tmp_path / "home" / "projects"
    projects.parent.mkdir()
    projects.symlink_to(tmp_path / "disk1" / "projects", target_is_directory=True)
    assert [p.name for p in iter_project_dirs(projects)] == [SHOP]
    with open_regular(projects / SHOP / f"{S1}.jsonl") as fh:
        assert fh.read() == b"OLD\n"
    projects.unlink()
    projects.symlink_to(tmp_path / "disk2" / "projects", target_is_directory=True)
    assert [p.name for p in iter_project_dirs(projects)] == [SHOP]
    with open_regular(projects / SHOP / f"{S1}.jsonl") as fh:
        assert fh.read() == b"NEW\n"


def test_a_projects_folder_replaced_again_and_again_leaves_no_descriptor_each_time(tmp_path: Path) -> None:
    """The projects folder replaced by a copy (a restore, a sync replacing it whole) 200 times, a file read after
    each: before, each replacement left the old folder's descriptor open for the process's life (200 more, past
    the default limit of 1024 after as many); now at most `HELD_ROOTS` are ever kept. Each read sees the copy."""
    from storage.confined import HELD_ROOTS
    from storage.fileopen import open_regular

    projects = tmp_path / "projects"
    (projects / SHOP).mkdir(parents=True)
    list(iter_project_dirs(projects))
    before = len(os.listdir("/proc/self/fd"))
    for n in range(200):
        projects.rename(tmp_path / "old")
        (projects / SHOP).mkdir(parents=True)
        (projects / SHOP / f"{S1}.jsonl").write_bytes(b"%d\n" % n)
        shutil.rmtree(tmp_path / "old")
        with open_regular(projects / SHOP / f"{S1}.jsonl") as fh:
            assert fh.read() == b"%d\n" % n
    kept = len(os.listdir("/proc/self/fd")) - before
    print(f"200 replacements of the projects folder: {kept} descriptors more")
    assert kept <= HELD_ROOTS
