"""Our live-session record (`<home>/sessions/<pid>.json`, `storage.livesession.LiveMark`) against a registry someone
tampered with.

- Another config home's `sessions` (the record goes in every home of the projects folder that has a registry) made a
  link to a folder outside, or to nowhere: nothing is written through it, and the writer is refused (`unsafe`, naming
  the link), as it is when its own home's `sessions` is a link: a record the CLI of that home cannot see would let it
  resume the session we write (before: the writer went on without that record, silently).
- A `sessions/<pid>.json` planted before we write (a link to a file outside, a FIFO): replaced by our record, nothing
  outside touched, nothing blocks; its temporary name planted: refused, nothing outside touched.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from storage.errors import Unsafe
from storage.livesession import live_records
from storage.recorder import SessionRecorder


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
