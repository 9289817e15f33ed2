"""`session-lsp check` of a whole folder reads it on forked worker processes; stopping `check` ends them all, even a
worker stuck for good (here: stopped by SIGSTOP, as the CI's worker hung on a lock it inherited at the fork), and
whoever reads `check`'s output sees its end. Only a liveness bound (LIVENESS seconds: longer means stuck)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import generated_folder
from rawlsp import LIVENESS
from turnproc import ROOT, alive, children, has_read


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 40 MB of sessions: several tasks, so `check` forks its workers and they have work queued."""
    return generated_folder(tmp_path_factory, "stopworkers", 40, 5)


@pytest.mark.parametrize(
    ("cache", "sig"),
    [("on", signal.SIGINT), ("off", signal.SIGINT), ("off", signal.SIGTERM)],
    ids=["indexed-sigint", "uncached-sigint", "uncached-sigterm"],
)
def test_stopping_check_ends_its_workers_even_a_stuck_one(
    big: Path, tmp_path: Path, cache: str, sig: signal.Signals
) -> None:
    """Before, SIGINT left `check` waiting for ever for its stuck worker (the pool finished every queued task
    first), and SIGTERM of an uncached `check` left both workers running, holding its output open."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    if cache == "off":
        env["SESSION_LSP_NO_CACHE"] = "1"
    proc = subprocess.Popen(
        [sys.executable, "-m", "server.cli", "check", "--projects-dir", str(big), "-j", "2"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + LIVENESS * 3
        while len(workers) < 2:
            assert proc.poll() is None, f"check ended (status {proc.returncode}) before its workers were seen"
            assert time.monotonic() < deadline, "check never forked its workers"
            workers = children(proc.pid)
            time.sleep(0.002)
        while not all(has_read(w) for w in workers):  # each past its start, in the pool's loop
            assert time.monotonic() < deadline, "the workers never read their tasks"
            time.sleep(0.002)
        for w in workers:
            os.kill(w, signal.SIGSTOP)  # stuck for good, and holding the task it took
        assert proc.poll() is None, "check ended before it was asked to stop"
        os.kill(proc.pid, sig)
        try:
            out, _ = proc.communicate(timeout=LIVENESS)  # to the end of its output: no worker holds it open
        except subprocess.TimeoutExpired:
            pytest.fail(f"check, or a worker holding its output, still runs {LIVENESS} s after {sig.name}")
        deadline = time.monotonic() + LIVENESS
        while any(alive(w) for w in workers):
            assert time.monotonic() < deadline, f"workers {sorted(w for w in workers if alive(w))} outlived check"
            time.sleep(0.05)
        print(f"{sig.name}, cache {cache}: check ended with status {proc.returncode}, its {len(workers)} workers gone")
        assert proc.returncode in (130, -signal.SIGINT, -signal.SIGTERM), proc.returncode
        assert b"checked" not in out  # stopped, not finished
    finally:
        for w in workers:
            if alive(w):
                os.kill(w, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


IMPORTS = """
import os, sys
from pathlib import Path
from server.index.persisted import check_folder_indexed
from server.index.workerpool import in_worker

log = sys.argv[2]


def audit(event, args):
    if event == "import" and in_worker():  # in a worker, after the fork: an import takes module locks
        with open(log, "a") as fh:  # that another thread of the parent may have held at the fork
            fh.write(f"{os.getpid()} {args[0]}\\n")


sys.addaudithook(audit)
diags, files = check_folder_indexed(Path(sys.argv[1]), workers=2)
print(files)
"""


def test_a_worker_imports_nothing(big: Path, tmp_path: Path) -> None:
    """A worker forked while another thread of the parent imports a module would wait for ever on that module's
    import lock if it imported the same module: our workers import nothing. Before, each imported `ctypes` (and
    loaded libffi) to set its parent-death signal, before that signal was set."""
    log = tmp_path / "imports.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", IMPORTS, str(big), str(log)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=LIVENESS * 12,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    files = int(done.stdout)
    imported = log.read_text().splitlines() if log.exists() else []
    print(f"{files} files checked on 2 workers; {len(imported)} imports in the workers")
    assert files > 4 and imported == []
