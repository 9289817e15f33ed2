"""What an adversarial review of the first index in its own process found (`server.index.prefill`,
`server.lsp.firstreport`), over a raw stdio pipe to the real server: a frame the early reader does not take
(too large, malformed) made it spin a core until the hold's end; SIGTERM during the hold ended the server with
the default disposition (-15, not 128 + 15 as later); and the child, run with `-I`, lost the server's UTF-8 mode,
so under `LC_ALL=C PYTHONUTF8=0` its early report listed a project folder the server itself leaves out.

In the hold tests the first index's process is stopped (SIGSTOP) as soon as it appears, so the hold lasts its
whole `HOLD` seconds whatever the machine's speed; it is continued (SIGCONT) before the test ends."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import age
from rawlsp import LIVENESS, RawServer
from turnproc import alive, first_index_process

from server.lsp.firstreport import HOLD


def _cpu(pid: int) -> float:
    """User + system CPU seconds of the process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.fixture
def held(corpus_projects: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[RawServer, int, int]]:
    """A cold server holding a `workspace/diagnostic` (its id), with its first index's process stopped (its pid)."""
    monkeypatch.delenv("SESSION_LSP_NO_CACHE", raising=False)
    age(corpus_projects)
    server = RawServer("-v")
    child = None
    try:
        server.initialize(corpus_projects, watch=False)
        request_id = server.request("workspace/diagnostic", {"previousResultIds": []})
        child = first_index_process(server.proc.pid, timeout=5.0)
        if child is not None:
            os.kill(child, signal.SIGSTOP)
        assert child is not None, "the first index's process never showed"
        assert request_id not in server.responses, "the first index was done before it could be stopped"
        yield server, request_id, child
    finally:
        if child is not None:
            try:
                os.kill(child, signal.SIGCONT)
            except ProcessLookupError:
                pass
        server.kill()


def test_a_large_notification_during_the_hold_does_not_spin_the_early_reader(held: tuple[RawServer, int, int]) -> None:
    """A `didOpen` of a transcript larger than `readahead.MAX_AHEAD` (1 MiB: editors send the whole text) that comes
    while the request is held: `FrameReader.take` gives None at once without reading; it is pygls's to read now,
    and the held request goes with it (before, the early reader looped on it at 100% CPU until the deadline)."""
    server, _, _ = held
    text = "x" * (2 * 2**20)
    params = {"textDocument": {"uri": "file:///nowhere/a.jsonl", "languageId": "jsonl", "version": 1, "text": text}}
    before, began = _cpu(server.proc.pid), time.monotonic()
    server.notify("textDocument/didOpen", params)
    time.sleep(HOLD * 0.6)
    spent, waited = _cpu(server.proc.pid) - before, time.monotonic() - began
    # spinning takes a whole core for the whole wait (and pygls loads beside it); without it, what the process spends
    # is pygls loading after the handover (0.3-1.0 s of CPU, by how busy the machine is)
    assert spent < 0.8 * waited, f"the early reader used {spent:.2f} s of CPU in {waited:.2f} s while holding"


def test_sigterm_during_the_hold_ends_the_server_as_exit_does(held: tuple[RawServer, int, int]) -> None:
    """SIGTERM while the request is held ends the server with 128 + 15, as it does once pygls loaded
    (`SessionServer._end_on_signals`), and the first index's process goes with it (parent-death signal)."""
    server, _, child = held
    server.proc.send_signal(signal.SIGTERM)
    rc, _ = server.wait_exit(LIVENESS)
    os.kill(child, signal.SIGCONT)  # stopped maybe before it set its parent-death signal: it then sees its parent gone
    deadline = time.monotonic() + LIVENESS
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child), "the first index's process outlived the server"
    assert rc == 128 + signal.SIGTERM, f"exit status {rc}"


def test_early_report_is_the_servers_own_whatever_the_file_system_encoding(
    corpus_projects: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SESSION_LSP_NO_CACHE", raising=False)
    project = next(p for p in sorted(corpus_projects.iterdir()) if p.is_dir() and any(p.glob("*.jsonl")))
    renamed = Path(os.fsdecode(os.fsencode(str(corpus_projects)) + b"/-Users-me-caf\xc3\xa9"))
    project.rename(renamed)
    with sorted(renamed.glob("*.jsonl"))[0].open("ab") as fh:
        fh.write(b"{not json\n")  # a finding in that folder
    age(corpus_projects)
    env = {**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0"}
    with RawServer("-v", env=env) as server:
        server.initialize(corpus_projects, watch=False)
        early = server.call("workspace/diagnostic", {"previousResultIds": []})
        deadline = time.monotonic() + LIVENESS
        while not any(n["method"] == "sessions/didChange" for n in server.notifications):  # the first index is done
            assert time.monotonic() < deadline
            time.sleep(0.05)
        later = server.call("workspace/diagnostic", {"previousResultIds": []})
        assert b"from the first index" in server.stderr, "not answered before pygls loaded: nothing to compare"
        early_uris = sorted(i["uri"] for i in early["result"]["items"])
        later_uris = sorted(i["uri"] for i in later["result"]["items"])
        assert early_uris == later_uris
