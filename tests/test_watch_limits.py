"""The folder still followed when the system refuses file-system events.

Linux gives each user at most `fs.inotify.max_user_instances` inotify instances (often 128: every editor window,
language server and file watcher of the user takes some) and `max_user_watches` watches (one per folder; heavy
users have more project and subagent folders than the 8,192 some systems allow). Out of either, a watcher cannot
start or misses folders. Here a real server runs as `nobody` while another process of `nobody` holds every
instance; it must still see a session written after it started, and say why it is polling.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from nobody import NOBODY, cli_command, cli_env, give, shared_dir
from rawlsp import RawServer

HOG = """
import ctypes, os, sys
libc = ctypes.CDLL("libc.so.6", use_errno=True)
held = []
while True:
    fd = libc.inotify_init1(os.O_CLOEXEC)
    if fd < 0:
        break
    held.append(fd)
print(len(held), flush=True)
sys.stdin.read()
"""

WATCH_HOG = """
import ctypes, os, sys
libc = ctypes.CDLL("libc.so.6", use_errno=True)
fd = libc.inotify_init1(os.O_CLOEXEC)
base, spare = sys.argv[1], int(sys.argv[2])
wds = []
while True:
    path = os.path.join(base, str(len(wds)))
    os.mkdir(path)
    wd = libc.inotify_add_watch(fd, path.encode(), 0x100)
    if wd < 0:
        break
    wds.append(wd)
for wd in wds[:spare]:  # leave exactly `spare` watches for the server
    libc.inotify_rm_watch(fd, wd)
print(len(wds), flush=True)
sys.stdin.read()
"""

SID1 = "11111111-1111-4111-8111-111111111111"
SID2 = "22222222-2222-4222-8222-222222222222"
SID3 = "33333333-3333-4333-8333-333333333333"


def _session(sid: str, text: str) -> bytes:
    row = {
        "type": "user", "uuid": sid.replace("1", "a").replace("2", "b"), "parentUuid": None, "sessionId": sid,
        "isSidechain": False, "cwd": "/w", "timestamp": "2026-12-01T10:00:00.000Z",
        "message": {"role": "user", "content": text},
    }  # fmt: skip
    return json.dumps(row).encode() + b"\n"


@pytest.fixture
def shared() -> Iterator[Path]:
    yield from shared_dir()


def test_no_inotify_instance_left_the_server_polls(shared: Path) -> None:
    home = shared / "home"
    projects = home / ".claude" / "projects"
    (projects / "-w").mkdir(parents=True)
    (projects / "-w" / f"{SID1}.jsonl").write_bytes(_session(SID1, "first"))
    give(home)
    python = cli_command()[:-2]  # setpriv ... python
    hog = subprocess.Popen([*python, "-c", HOG], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=cli_env(home))
    try:
        assert hog.stdout is not None
        held = int(hog.stdout.readline())
        assert held > 0
        with RawServer(env=cli_env(home), command=cli_command()) as server:
            server.initialize(projects)
            listed = server.call("sessions/list", {})
            assert [s["sessionId"] for s in listed["result"]["sessions"]] == [SID1], listed
            later = projects / "-w" / f"{SID2}.jsonl"
            later.write_bytes(_session(SID2, "second") + b"{not json\n")
            os.chown(later, NOBODY, NOBODY)
            deadline = time.monotonic() + 30
            while True:  # the index (not only a listing read from the disk) has the new file and its damage
                report = server.call("workspace/diagnostic", {"previousResultIds": []})["result"]
                codes = {
                    d["code"] for item in report["items"] if item["uri"].endswith(later.name) for d in item["items"]
                }
                if "invalid-json" in codes:
                    break
                assert time.monotonic() < deadline, (
                    f"the new session was never indexed; stderr {server.stderr[-1500:]!r}"
                )
                time.sleep(0.5)
            got = server.call("sessions/list", {})["result"]["sessions"]
            assert sorted(s["sessionId"] for s in got) == [SID1, SID2]
            shown = [n for n in server.notifications if n["method"] == "window/showMessage"]
            assert any("max_user_instances" in n["params"]["message"] for n in shown), shown
    finally:
        hog.kill()
        hog.wait()


def test_too_few_watches_for_every_folder_the_server_polls(shared: Path) -> None:
    """Two watches left: the projects folder and one project folder are watched, the other is not (watchdog leaves
    it out silently); a session written there later must still be indexed."""
    home = shared / "home"
    projects = home / ".claude" / "projects"
    for name in ("-a", "-b"):
        (projects / name).mkdir(parents=True)
    (projects / "-a" / f"{SID1}.jsonl").write_bytes(_session(SID1, "first"))
    holes = shared / "holes"
    holes.mkdir()
    give(home)
    give(holes)
    python = cli_command()[:-2]
    hog = subprocess.Popen(
        [*python, "-c", WATCH_HOG, str(holes), "2"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=cli_env(home)
    )
    try:
        assert hog.stdout is not None
        assert int(hog.stdout.readline()) > 0
        with RawServer(env=cli_env(home), command=cli_command()) as server:
            server.initialize(projects)
            assert [s["sessionId"] for s in server.call("sessions/list", {})["result"]["sessions"]] == [SID1]
            for name in ("-a", "-b"):  # whichever of the two folders watchdog left out
                later = projects / name / f"{SID2 if name == '-a' else SID3}.jsonl"
                later.write_bytes(_session(SID2 if name == "-a" else SID3, "later") + b"{not json\n")
                os.chown(later, NOBODY, NOBODY)
            deadline = time.monotonic() + 30
            while True:
                report = server.call("workspace/diagnostic", {"previousResultIds": []})["result"]
                damaged = {item["uri"].rsplit("/", 1)[1] for item in report["items"] if any(
                    d["code"] == "invalid-json" for d in item["items"])}  # fmt: skip
                if damaged == {f"{SID2}.jsonl", f"{SID3}.jsonl"}:
                    break
                assert time.monotonic() < deadline, f"indexed only {damaged}; stderr {server.stderr[-1500:]!r}"
                time.sleep(0.5)
            shown = [n for n in server.notifications if n["method"] == "window/showMessage"]
            assert any("max_user_watches" in n["params"]["message"] for n in shown), shown
    finally:
        hog.kill()
        hog.wait()
