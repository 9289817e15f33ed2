"""Running the command line as the unprivileged user `nobody` (the tests run as root, which no permission stops).

`setpriv` drops to uid and gid 65534 with no supplementary groups. The interpreter must be one `nobody` may run:
this one when it lies in folders anyone may search, else the system's `python3.X` of the same version, with this
checkout and the virtual environment's packages on its path. Without setpriv or such an interpreter the tests
skip, except under CI (`CI=true`), where they fail.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

NOBODY = 65534
REPO = Path(__file__).resolve().parent.parent
LIVENESS = 120.0
"""Seconds a command may take before it is taken for hung (never reached when it works: it takes about 1 s)."""


def _searchable(path: Path) -> bool:
    """Whether a user who is neither owner nor in the group may reach and run `path`."""
    for folder in path.parents:
        if not os.stat(folder).st_mode & stat.S_IXOTH:
            return False
    return bool(os.stat(path).st_mode & stat.S_IXOTH)


def interpreter() -> str | None:
    """A Python of this version that `nobody` may run."""
    mine = Path(sys.executable).resolve()
    if _searchable(mine):
        return str(mine)
    system = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    return str(system) if system.exists() and _searchable(system) else None


def require() -> tuple[str, str]:
    """(setpriv, interpreter); skips (fails under CI) when the machine cannot run a command as `nobody`."""
    setpriv = shutil.which("setpriv") or ("/usr/bin/setpriv" if os.path.exists("/usr/bin/setpriv") else None)
    python = interpreter()
    why = None
    if os.geteuid() != 0:
        why = "the tests must run as root to become nobody"
    elif setpriv is None:
        why = "setpriv is missing (util-linux)"
    elif python is None:
        why = f"no Python {sys.version_info.major}.{sys.version_info.minor} that nobody may run"
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    assert setpriv is not None and python is not None
    return setpriv, python


def shared_dir() -> Iterator[Path]:
    """A fresh folder under /tmp that `nobody` may search (root's pytest folders are 0700), removed after."""
    folder = Path(tempfile.mkdtemp(prefix="session-lsp-nobody-", dir="/tmp"))
    try:
        folder.chmod(0o755)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def give(path: Path) -> None:
    """`path` and everything below it owned by `nobody`: folders 0700, files 0600."""
    for p in [path, *path.rglob("*")]:
        os.chown(p, NOBODY, NOBODY, follow_symlinks=False)
        if not p.is_symlink():
            p.chmod(0o700 if p.is_dir() else 0o600)


def cli_command() -> list[str]:
    """`python -m server.cli` as `nobody` (its arguments follow)."""
    setpriv, python = require()
    return [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--", python, "-m", "server.cli"]


def cli_env(home: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a command run as `nobody`: `home` as its home, this checkout on the path, nothing else."""
    paths = [str(REPO), sysconfig.get_paths()["purelib"]]
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), "PYTHONPATH": os.pathsep.join(paths), **(env or {})}


def run_cli(args: list[str], home: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """`python -m server.cli ARGS` as `nobody`, with `home` as its home and no other environment of ours."""
    return subprocess.run(
        [*cli_command(), *args], env=cli_env(home, env), cwd="/", capture_output=True, timeout=LIVENESS, check=False
    )
