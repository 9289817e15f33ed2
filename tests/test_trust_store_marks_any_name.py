"""A session written from a store is known as such whatever name its projects folder is reached by.

`storage.storeorigin` marks such a session so that a turn on it without the person's own `cwd` is refused
(`server.agent.session.not_from_store`): its recorded cwd is the store's. The mark was made below the parent of
the projects folder's name AS WRITTEN: with `~/.claude/projects` a link to `/data/projects`, a
`session-lsp pull --projects-dir /data/projects` marked under `/data` while the server, on `~/.claude/projects`,
looked under `~/.claude`: the mark was missed and a turn rooted its tools at the store's recorded cwd. Now marks
are made below the parent of the folder's real path, and marks left at the old as-written place still count.

Real files: a projects folder at `<tmp>/data/projects`, reached too through the link `<tmp>/home/.claude/projects`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import orjson
import pytest

from server.agent.session import not_from_store
from storage.errors import Unsafe
from storage.fork import fork_session
from storage.store_materialize import StoreSession, write_session
from storage.storeorigin import NAMES, from_store

CORPUS = Path(__file__).parent / "corpus" / "generated" / "projects" / "-tmp-slsp-corpus-shop"
SOURCE = "11111111-1111-4111-8111-111111111111"
SID = "47474747-4747-4747-8747-474747474747"
PROJECT = "-tmp-slsp-corpus-shop"


@pytest.fixture
def names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(the projects folder's real name, a link to it as `~/.claude/projects`); the default config home elsewhere."""
    real = tmp_path / "data" / "projects"
    real.mkdir(parents=True)
    home = tmp_path / "home" / ".claude"
    home.mkdir(parents=True)
    link = home / "projects"
    link.symlink_to(real, target_is_directory=True)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "other-config"))
    return real, link


def pulled(projects: Path, sid: str = SID) -> Path:
    """A store session written into `projects` as `pull` writes it (marked first)."""
    rows = [orjson.loads(line) for line in (CORPUS / f"{SOURCE}.jsonl").read_bytes().splitlines() if line.strip()]
    rows = [{**row, "sessionId": sid} if "sessionId" in row else row for row in rows]
    return write_session(projects, StoreSession(PROJECT, sid, rows))


def refused(projects: Path, path: Path) -> bool:
    try:
        not_from_store(projects, path)
    except Unsafe:
        return True
    return False


def test_a_pull_through_the_real_name_counts_through_the_link(names: tuple[Path, Path]) -> None:
    real, link = names
    path = pulled(real)
    assert refused(real, path)
    assert refused(link, link / PROJECT / f"{SID}.jsonl"), "the server on the link's name missed the pull's mark"
    mark = real.parent.joinpath(*NAMES, SID)
    assert stat.S_IMODE(os.lstat(mark).st_mode) == 0o600


def test_a_pull_through_the_link_counts_through_the_real_name(names: tuple[Path, Path]) -> None:
    real, link = names
    path = pulled(link)
    assert refused(link, path)
    assert refused(real, real / PROJECT / f"{SID}.jsonl"), "a check on the real name missed the mark"
    assert not link.parent.joinpath("session-lsp").exists()  # one place: below the real path's parent

    # a fork of it, made through the link, is marked for the real name too
    new_sid, fork = fork_session(path, link)
    assert from_store(real, new_sid) and from_store(link, new_sid)
    assert refused(real, real / PROJECT / f"{new_sid}.jsonl")


def test_an_unmarked_session_is_not_refused_under_either_name(names: tuple[Path, Path]) -> None:
    real, link = names
    pulled(real)
    other = "48484848-4848-4848-8848-484848484848"
    assert not from_store(real, other) and not from_store(link, other)


def test_a_mark_at_the_old_as_written_place_still_counts(
    names: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    real, link = names
    path = pulled(real)
    os.unlink(real.parent.joinpath(*NAMES, SID))  # only the mark an older version left remains
    old = link.parent.joinpath(*NAMES)
    old.mkdir(parents=True)
    (old / SID).touch(mode=0o600)
    assert refused(link, link / PROJECT / f"{SID}.jsonl")  # the name it was made under
    # the default config home is the link's: its marks count for the real name too (a server's old marks)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(link.parent))
    assert refused(real, path)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(real.parent.parent / "elsewhere"))
    assert not refused(real, path)


MARK_AS_NOBODY = """
import sys
from storage.storeorigin import from_store, mark_from_store
name, real, link, sid = sys.argv[1:]
mark_from_store(name, sid)
print(from_store(real, sid), from_store(link, sid))
"""


@pytest.mark.parametrize("through", ["link", "real"])
def test_where_the_real_folders_parent_is_not_ours_the_config_home_takes_the_mark(through: str) -> None:
    """`/data` root's, `/data/projects` the person's, reached as `~/.claude/projects` too: a pull through either
    name is marked below `~/.claude` (a home `from_store` looks in for both names) instead of failing for want of
    `/data/session-lsp`. Run as `nobody`, whom the permissions stop."""
    import subprocess

    from nobody import LIVENESS, NOBODY, cli_command, cli_env, give, shared_dir

    for shared in shared_dir():
        real = shared / "data" / "projects"
        real.mkdir(parents=True)  # /data stays root's, 0755
        home = shared / "home"
        link = home / ".claude" / "projects"
        link.parent.mkdir(parents=True)
        link.symlink_to(real, target_is_directory=True)
        give(home)
        os.chown(real, NOBODY, NOBODY)
        name = link if through == "link" else real
        run = subprocess.run(
            [*cli_command()[:-2], "-c", MARK_AS_NOBODY, str(name), str(real), str(link), SID],
            env=cli_env(home),
            cwd="/",
            capture_output=True,
            text=True,
            timeout=LIVENESS,
        )
        assert run.returncode == 0, run.stderr  # before: PermissionError, the pull failed
        assert run.stdout.split() == ["True", "True"], run.stdout
        assert link.parent.joinpath(*NAMES, SID).exists()
        assert not (shared / "data" / NAMES[0]).exists()


NEVER_MISSED = """
import sys
from storage.storeorigin import from_store, mark_from_store
x, y, sid = sys.argv[1:]
try:
    mark_from_store(x, sid)
    print("marked", from_store(y, sid))
except OSError as exc:
    print("refused", type(exc).__name__)
"""


def test_a_mark_is_never_made_where_another_name_would_miss_it() -> None:
    """`/data` root's, `/data/projects` the person's, reached through links `/x/projects` and `/y/projects`, and no
    default config home sharing it: marking through `/x` fails (the pull with it, before writing) rather than
    marking below `/x`, where a server on `/y` never looks. Run as `nobody`, whom the permissions stop."""
    import subprocess

    from nobody import LIVENESS, NOBODY, cli_command, cli_env, give, shared_dir

    for shared in shared_dir():
        real = shared / "data" / "projects"
        real.mkdir(parents=True)  # /data stays root's, 0755
        home = shared / "home"
        for name in ("x", "y"):
            (home / name).mkdir(parents=True)
            (home / name / "projects").symlink_to(real, target_is_directory=True)
        give(home)
        os.chown(real, NOBODY, NOBODY)
        run = subprocess.run(
            [*cli_command()[:-2], "-c", NEVER_MISSED, str(home / "x" / "projects"), str(home / "y" / "projects"), SID],
            env=cli_env(home),
            cwd="/",
            capture_output=True,
            text=True,
            timeout=LIVENESS,
        )
        assert run.returncode == 0, run.stderr
        assert run.stdout.split() == ["refused", "PermissionError"], run.stdout  # before: "marked False"
        assert not (home / "x").joinpath(*NAMES).exists()
