"""The watcher stops every thread it started, also when it switches to polling while it is being stopped, and it
names the limit that really stopped the native watcher.

The coverage check (every minute, on the watcher's thread) may find a folder unwatched and replace the native
observer by a polling one just as the server shuts down: the polling observer must not outlive `stop()`. Here the
switch runs on another thread at once with `stop()`, at many offsets, on a real folder with real observers.
"""

from __future__ import annotations

import errno
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from watchdog.utils import BaseThread

from server.index import ProjectIndex, watcher
from server.index.watchcover import INSTANCES, WATCHES, limit_advice, limit_reason, open_file_limit_reason, uncovered
from server.index.watcher import IndexWatcher

ROOT = Path(__file__).resolve().parent.parent
RUNS = 60
BURST_S = 1.5


def _watchdog_threads() -> set[threading.Thread]:
    """Live watchdog threads: observers, emitters and inotify readers."""
    return {t for t in threading.enumerate() if isinstance(t, BaseThread) and t.is_alive()}


def test_switch_to_polling_during_stop_leaves_no_thread(tmp_path: Path) -> None:
    """The switch begins from 3 ms before to 3 ms after `stop()` (each takes about 1 ms): both orders and every
    overlap between them are met over the runs."""
    projects = tmp_path / "projects"
    (projects / "-w" / "s" / "subagents").mkdir(parents=True)
    before = _watchdog_threads()
    rng = random.Random(7)
    leaked: list[str] = []
    switched = 0
    for run in range(RUNS):
        w = IndexWatcher(ProjectIndex(projects, persist=False), recheck=0.05)
        w.start(scan=False)
        go = threading.Barrier(2)
        offset = rng.uniform(-0.003, 0.003)  # < 0: the switch first
        did: list[bool] = []

        def switch(
            w: IndexWatcher = w, go: threading.Barrier = go, offset: float = offset, did: list[bool] = did
        ) -> None:
            go.wait()
            threading.Event().wait(max(offset, 0.0))
            did.append(w._poll_instead("a test switches to polling"))  # what the coverage check does on a shortfall

        switcher = threading.Thread(target=switch, name="test-switch")
        switcher.start()
        go.wait()
        threading.Event().wait(max(-offset, 0.0))
        failed = ""
        try:
            w.stop()
        except Exception as exc:  # e.g. joining the polling observer the switch had not started yet
            failed = f"stop() raised {exc!r}; "
        stopped = _watchdog_threads() - before  # as stop() returns
        switcher.join(timeout=10)
        later = _watchdog_threads() - before  # anything the switch started after stop() returned
        alive = stopped | later
        switched += bool(did and did[0])
        if alive or failed:
            names = sorted(f"{t.name}:{type(t).__name__}" for t in alive)
            leaked.append(f"run {run} (offset {offset * 1000:+.2f} ms): {failed}alive {names}")
            for t in alive:  # do not let one run's leak spill into the next
                if isinstance(t, BaseThread):
                    t.stop()
            for t in alive:
                t.join(timeout=5)
    assert not leaked, f"{len(leaked)} of {RUNS} runs left threads alive after stop(): {leaked}"
    assert 0 < switched < RUNS, f"the switch won the race in {switched} of {RUNS} runs: the race was not met"


def test_stop_while_not_started_and_twice(tmp_path: Path) -> None:
    """`stop()` of a watcher never started, and a second `stop()`, do nothing wrong."""
    projects = tmp_path / "projects"
    projects.mkdir()
    before = _watchdog_threads()
    IndexWatcher(ProjectIndex(projects, persist=False)).stop()
    w = IndexWatcher(ProjectIndex(projects, persist=False))
    w.start(scan=False)
    w.stop()
    w.stop()
    assert not _watchdog_threads() - before


OUT_OF_DESCRIPTORS = """
import os, resource, sys
from pathlib import Path
from server.index.store import ProjectIndex
from server.index.watcher import IndexWatcher

idx = ProjectIndex(Path(sys.argv[1]), persist=False)
soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
reasons = []
w = IndexWatcher(idx, on_fallback=reasons.append)
held = []
try:
    while True:  # every descriptor the process may open: the observer's inotify_init as it starts gets none
        held.append(os.open("/dev/null", os.O_RDONLY))
except OSError:
    pass
try:
    w.start(scan=False)
except OSError:
    pass  # polling instead needs a descriptor too (to list the folder)
for fd in held:
    os.close(fd)
print(soft, w.polling, file=sys.stderr)
print(reasons[0] if reasons else "")
w.stop()
"""


def test_out_of_file_descriptors_names_the_open_file_limit(tmp_path: Path) -> None:
    """A process at its `ulimit -n` gets EMFILE from inotify_init too: the reason is that limit, not the system's
    `fs.inotify.max_user_instances` (which has instances left here)."""
    projects = tmp_path / "projects"
    (projects / "-w").mkdir(parents=True)

    def lower_nofile() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

    run = subprocess.run(
        [sys.executable, "-c", OUT_OF_DESCRIPTORS, str(projects)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=lower_nofile,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert run.stderr.split()[-2:] == ["64", "True"], run.stderr  # the limit was lowered; the watcher polls
    reason = run.stdout.strip()
    assert "open-file limit" in reason and "ulimit -n" in reason, reason
    assert "max_user_instances" not in reason, reason


@pytest.mark.parametrize(
    ("reason", "named", "other"),
    [
        (limit_reason(OSError(errno.ENOSPC, "inotify watch limit reached")), WATCHES, INSTANCES),
        (
            "the inotify watch limit is reached (fs.inotify.max_user_watches): 1 of 2 folders watched",
            WATCHES,
            INSTANCES,
        ),
        ("no inotify instance left for this user (fs.inotify.max_user_instances)", INSTANCES, WATCHES),
    ],
)
def test_fallback_advice_names_the_limit_of_the_reason(reason: str | None, named: str, other: str) -> None:
    """What `window/showMessage` tells the person to raise is the limit its reason names."""
    assert reason is not None
    advice = limit_advice(reason)
    assert f"sysctl {named}=" in advice, advice
    assert other not in advice, advice


def test_emfile_far_from_the_open_file_limit_names_instances() -> None:
    """This process has descriptors to spare: an EMFILE from inotify is the user's instances."""
    reason = limit_reason(OSError(errno.EMFILE, "inotify instance limit reached"))
    assert reason is not None and INSTANCES in reason and "ulimit" not in reason, reason


def test_fallback_advice_for_the_open_file_limit() -> None:
    advice = limit_advice(open_file_limit_reason(64, 64))
    assert "ulimit -n" in advice and "sysctl" not in advice, advice


def test_a_burst_of_new_folders_does_not_switch_to_polling(tmp_path: Path) -> None:
    """Folders made faster than the native observer adds their watches (a backup restored) count short while they
    are made: a check in the burst (called here from the test's thread, as the watcher's thread checks only when no
    event is pending) counts again `COVER_SETTLE_S` later, on the watcher's thread, and keeps native events."""
    projects = tmp_path / "projects"
    (projects / "-w").mkdir(parents=True)
    reasons: list[str] = []
    w = IndexWatcher(ProjectIndex(projects, persist=False), on_fallback=reasons.append, recheck=0.02)
    w.start(scan=False)
    shorts: list[tuple[int, int] | None] = []

    def burst() -> None:
        end, i = time.monotonic() + BURST_S, 0
        while time.monotonic() < end:
            os.makedirs(projects / "-restored" / f"{i:06d}" / "subagents")
            i += 1
            if i % 200 == 0:
                shorts.append(uncovered(projects))

    maker = threading.Thread(target=burst, name="test-burst")
    try:
        assert uncovered(projects) is None
        maker.start()
        time.sleep(BURST_S / 4)
        checked = w._check_cover()  # the minute's check, in the middle of the burst
        maker.join()
        deadline = time.monotonic() + 60
        while uncovered(projects) is not None:  # the native observer catches up
            assert time.monotonic() < deadline, f"never caught up: {uncovered(projects)}"
            time.sleep(0.1)
        time.sleep(watcher.COVER_SETTLE_S + 1.0)  # the second count has been made
        assert any(shorts), "the burst never counted short: the case was not met"
        assert not checked and not w.polling and not reasons, reasons
        assert w._next_cover_check > time.monotonic() + watcher.COVER_CHECK_S - 10  # back to once a minute
    finally:
        maker.join()
        w.stop()
