"""`$/cancelRequest` of a search (`workspace/symbol`) stops the search database's catch-up: the first search of a
folder reads all of it, and a cancelled one went on to the end (pygls cannot cancel a request that a thread of its
pool already runs), holding the search lock meanwhile. Real server over stdio; only liveness bounds."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import generated_folder
from rawlsp import LIVENESS, RawServer
from test_stopping import REQUEST_CANCELLED


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generated_folder(tmp_path_factory, "stopsearch", 40, 7)


def read_bytes(pid: int) -> int:
    """Bytes the process has read so far (`rchar`)."""
    fields = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    return int(fields["rchar"])


def test_cancel_of_the_first_search_stops_reading_the_folder(big: Path) -> None:
    with RawServer() as server:
        server.initialize(big, watch=False)
        assert "result" in server.call("workspace/diagnostic", {"previousResultIds": []}, timeout=120)
        assert "result" in server.call("sessions/list", {}, timeout=120)  # the first index's listing is stored too
        pid = server.proc.pid
        before = read_bytes(pid)
        server.request("workspace/symbol", {"query": "function"}, msg_id="search")
        deadline = time.monotonic() + LIVENESS
        while read_bytes(pid) - before < 2**20:  # the catch-up is reading the folder
            assert "search" not in server.responses, "the search was answered before it read 1 MiB"
            assert time.monotonic() < deadline, "the search never started reading"
            time.sleep(0.01)
        server.notify("$/cancelRequest", {"id": "search"})
        reply = server.answer("search", timeout=LIVENESS)
        assert reply.get("error", {}).get("code") == REQUEST_CANCELLED, str(reply)[:300]
        at_cancel = read_bytes(pid) - before
        # the reading stops at the end of the file it was in: wait until it reads nothing for half a second
        deadline = time.monotonic() + LIVENESS
        last, now = -1, read_bytes(pid)
        while now != last:
            assert time.monotonic() < deadline, f"still reading {LIVENESS} s after the cancel ({now - before} bytes)"
            time.sleep(0.5)
            last, now = now, read_bytes(pid)
        stopped = now - before
        titles = server.call("workspace/symbol", {"query": ""}, timeout=LIVENESS)  # the search lock is free
        assert "result" in titles, titles
        found = server.call("workspace/symbol", {"query": "function"}, timeout=120)  # catches up from where it was
        assert found.get("result"), str(found)[:300]
        folder = sum(p.stat().st_size for p in big.rglob("*.jsonl"))
        print(
            f"cancelled after {at_cancel / 2**20:.1f} MiB read; reading stopped at {stopped / 2**20:.1f} MiB "
            f"(folder: {folder / 2**20:.1f} MiB); the next search found {len(found['result'])} matches"
        )
        assert stopped < folder
