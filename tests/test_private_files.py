"""Files and folders we create are private, whatever the umask: the cache folder 0700 and every
file in it 0600 (the index and search databases, the message-count and usage caches), the lock
folder and its files, the server's log."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

UMASK0 = "import os, sys; os.umask(0); from server.cli import main; sys.exit(main())"


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", UMASK0, *args], capture_output=True, text=True, env=env, timeout=300)


def modes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): stat.S_IMODE(p.stat().st_mode) for p in [root, *root.rglob("*")]}


def assert_private(root: Path) -> None:
    for name, mode in modes(root).items():
        want = 0o700 if (root / name).is_dir() else 0o600
        assert mode == want, (root, name, oct(mode))


def test_everything_we_create_is_private_under_umask_zero(corpus_projects: Path, tmp_path: Path) -> None:
    p = str(corpus_projects)
    made: set[str] = set()
    for n, args in enumerate(
        (
            ["list", "--projects-dir", p, "--json"],
            ["check", "--projects-dir", p, "--json"],
            ["usage", "--projects-dir", p, "--json"],
            ["search", "ORACLE", "--projects-dir", p, "--json"],
            ["tag", "11111111-1111-4111-8111-111111111111", "private", "--projects-dir", p],
        )
    ):
        cache = tmp_path / f"xdg-cache-{n}"  # each command alone in a fresh cache: it creates the folder itself
        env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
        env.pop("SESSION_LSP_NO_CACHE", None)
        out = run(*args, env=env)
        assert out.returncode in (0, 1), (args, out.stderr)
        if (cache / "session-lsp").exists():
            assert_private(cache / "session-lsp")
            made |= {q.name for q in (cache / "session-lsp").iterdir()}
    assert {"index.sqlite3", "search.sqlite3"} <= made and any(n.startswith("usage-") for n in made), made
    assert_private(corpus_projects.parent / "session-lsp")  # the lock folder, in the projects folder's config home
