"""Attacks on the cache folder (`$XDG_CACHE_HOME/session-lsp`): folders we make on the way to it under
umask 0, and a cache folder someone else could have planted or can write (a symlink to elsewhere, a
folder of another user, a folder anyone may write). Each runs the real command line in a child process
and checks what happened to the modes and contents of the folders involved."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
UMASK0 = "import os, sys; os.umask(0); from server.cli import main; sys.exit(main())"
NOBODY = 65534


def run(*args: str, cache: Path | None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ}
    env.pop("SESSION_LSP_NO_CACHE", None)
    if cache is None:
        env["SESSION_LSP_NO_CACHE"] = "1"
    else:
        env["XDG_CACHE_HOME"] = str(cache)
    return subprocess.run(
        [sys.executable, "-c", UMASK0, *args], capture_output=True, text=True, env=env, cwd=REPO, timeout=300
    )


def snapshot(folder: Path) -> dict[str, tuple[int, int, str]]:
    """Every entry under `folder` (itself too, links not followed): owner, mode, and a hash of a file's bytes."""
    out = {}
    for p in [folder, *folder.rglob("*")]:
        st = p.lstat()
        body = hashlib.sha256(p.read_bytes()).hexdigest() if stat.S_ISREG(st.st_mode) else ""
        out[str(p.relative_to(folder))] = (st.st_uid, stat.S_IMODE(st.st_mode), body)
    return out


def test_folders_made_on_the_way_to_the_cache_are_private_under_umask_zero(
    corpus_projects: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "xdg" / "cache"  # neither exists yet
    out = run("list", "--projects-dir", str(corpus_projects), "--json", cache=cache)
    assert out.returncode == 0, out.stderr
    made = {str(p.relative_to(tmp_path)): oct(stat.S_IMODE(p.stat().st_mode)) for p in (cache.parent, cache)}
    assert made == {"xdg": "0o700", "xdg/cache": "0o700"}
    assert stat.S_IMODE((cache / "session-lsp").stat().st_mode) == 0o700


@pytest.mark.parametrize("kind", ["symlink", "another user's", "writable by anyone"])
def test_a_cache_folder_others_could_have_planted_is_never_used(
    corpus_projects: Path, tmp_path: Path, kind: str
) -> None:
    """Caching is off for the run: nothing in or behind the folder changes (no chmod through the
    link, none of our titles and prompts written where someone else can read them), and every
    command gives what it gives with caching off."""
    cache = tmp_path / "xdg"
    cache.mkdir(mode=0o700)
    planted = tmp_path / "planted"
    planted.mkdir()
    planted.chmod(0o755 if kind == "symlink" else 0o777)
    (planted / "notes.txt").write_text("someone else's\n")
    if kind == "another user's":
        os.chown(planted, NOBODY, NOBODY)
    if kind == "symlink":
        (cache / "session-lsp").symlink_to(planted, target_is_directory=True)
    else:
        planted.rename(cache / "session-lsp")
        planted = cache / "session-lsp"
    before = snapshot(planted)
    p = str(corpus_projects)
    warnings = []
    for args in (["list", "--projects-dir", p, "--json"], ["search", "ORACLE", "--projects-dir", p, "--json"]):
        used = run(*args, cache=cache)
        off = run(*args, cache=None)
        assert used.returncode == off.returncode == 0, (args, used.stderr, off.stderr)
        assert used.stdout == off.stdout, args
        warnings.append(used.stderr)
    assert snapshot(planted) == before
    for said in warnings:  # one line saying why
        assert said.count("\n") == 1 and "cache folder" in said and "not used" in said, said


def test_a_relative_cache_home_is_ignored(corpus_projects: Path, tmp_path: Path) -> None:
    """The XDG base directory rules: a relative `XDG_CACHE_HOME` is invalid and ignored (else the cache would land
    in whatever folder the command runs from); `~/.cache` is used."""
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": "relative-cache"}
    env.pop("SESSION_LSP_NO_CACHE", None)
    out = subprocess.run(
        [sys.executable, "-m", "server.cli", "list", "--projects-dir", str(corpus_projects), "--json"],
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(REPO)},
        cwd=work,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert list(work.iterdir()) == []
    assert (home / ".cache" / "session-lsp").is_dir()
