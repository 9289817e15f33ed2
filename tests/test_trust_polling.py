"""The polling watcher (`serve --polling`, for network file systems) never walks through a link in the projects folder.

watchdog's polling observer stats with `os.stat` by default, so a link to `/` or to `/proc/self` planted in the
projects folder had it walk the whole file system (and `/proc`, which leads back to `/`) at every poll: the
server answered nothing more (no `sessions/list` in 10 s). Links are now taken as what they are (`lstat`), as
everywhere else in the index; what they point to inside the projects folder is walked where it lies. Real
server over stdio; the only bound is a liveness one.
"""

from __future__ import annotations

import time
from pathlib import Path

from rawlsp import LIVENESS, RawServer

S1 = "11111111-1111-4111-8111-111111111111"
NEW = "33333333-3333-4333-8333-333333333333"


def test_a_link_to_the_root_or_proc_does_not_stop_the_polling_server(corpus_projects: Path) -> None:
    (corpus_projects / "-root").symlink_to("/")
    (corpus_projects / "-proc").symlink_to("/proc/self")
    shop = corpus_projects / "-Users-me-shop"
    with RawServer("--polling") as server:
        server.initialize(corpus_projects)
        listed = server.call("sessions/list", {}, timeout=LIVENESS)
        assert "result" in listed, listed
        before = len(listed["result"]["sessions"])
        assert NEW not in {s["sessionId"] for s in listed["result"]["sessions"]}
        # the watcher still sees what changes: a new session is listed once a poll found it
        data = (shop / f"{S1}.jsonl").read_bytes().replace(S1.encode(), NEW.encode())
        (shop / f"{NEW}.jsonl").write_bytes(data)
        began = time.monotonic()
        while True:
            ids = {s["sessionId"] for s in server.call("sessions/list", {}, timeout=LIVENESS)["result"]["sessions"]}
            if NEW in ids:
                break
            assert time.monotonic() - began < LIVENESS, "the polling watcher never saw the new session"
            time.sleep(0.2)
        print(f"listed {before} sessions, then {len(ids)} once the new one was polled")
        assert server.call("shutdown", timeout=LIVENESS).get("result", "x") is None
        server.notify("exit")
        rc, _ = server.wait_exit(LIVENESS)
        assert rc == 0, server.stderr[-1500:]
