"""Attacks on the cache folder (`$XDG_CACHE_HOME/session-lsp`): folders we make on the way to it under
umask 0. Each runs the real command line in a child process
and checks what happened to the modes and contents of the folders involved."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
from pathlib import Path

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
