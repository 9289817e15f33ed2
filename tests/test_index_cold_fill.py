"""The first index of a folder the database does not know: read on worker processes, stored, then restored.

After it, the listing and the usage totals come from the database (no file is summarised or summed again),
the diagnostics are those of an index that read every file itself, and no file's rows are held in memory;
files found by discovery are not resolved again for links. The index does not wait for the listing, which the
workers read after it and which a listing asked meanwhile waits for.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

import server.index.filestate as filestate
import server.index.fill as fill
import server.index.store as store
import storage.indexedlist as indexedlist
import storage.usage as usage
from server.index import ProjectIndex
from server.index.saved import StoredFileState
from storage.indexdb import IndexDB
from storage.sessions import list_sessions
from storage.usagetotals import sessions_usage_indexed

CORPUS = Path(__file__).resolve().parent / "corpus" / "claude-code-2.1.328" / "projects"
COPIES = 3


@pytest.fixture
def projects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("SESSION_LSP_NO_CACHE", raising=False)
    dest = tmp_path / "projects"
    shutil.copytree(CORPUS, dest)
    for n in range(COPIES):  # enough files for the worker processes
        shutil.copytree(CORPUS / "-Users-me-shop", dest / f"-copy-{n}")
    damaged = dest / "-copy-0" / "11111111-1111-4111-8111-111111111111.jsonl"
    other = (dest / "-copy-0" / "d864acd2-d28b-43ce-b430-2208a10860fe.jsonl").read_text().splitlines()
    elsewhere = next(json.loads(line)["uuid"] for line in other if '"uuid"' in line)
    with damaged.open("a") as fh:  # a bad line, a leaf in no file, and one in the next file (settled across files)
        fh.write("not json\n")
        for leaf in ("00000000-0000-4000-8000-000000000000", elsewhere):
            fh.write(json.dumps({"type": "summary", "summary": "s", "leafUuid": leaf}) + "\n")
    lines = (dest / "-copy-1" / "11111111-1111-4111-8111-111111111111.jsonl").read_text().splitlines(keepends=True)
    del lines[3]  # a row's parent gone
    (dest / "-copy-1" / "11111111-1111-4111-8111-111111111111.jsonl").write_text("".join(lines))
    hour_ago = time.time() - 3600  # settled: what the database may keep
    for p in dest.rglob("*.jsonl"):
        os.utime(p, (hour_ago, hour_ago))
    return dest


def _counting(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> list[int]:
    """Calls of `module.name` made in this process (a worker process counts in its own copy)."""
    calls = [0]
    original = getattr(module, name)

    def counted(*args: object, **kwargs: object) -> object:
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def _loaded(idx: ProjectIndex) -> int:
    return sum(1 for s in idx.files.values() if not isinstance(s, StoredFileState) or s.loaded)


def test_a_cold_scan_reads_on_workers_and_leaves_every_answer_in_the_database(
    projects: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = sorted(projects.rglob("*.jsonl"))
    reads = _counting(monkeypatch, filestate, "read_transcript")
    idx = ProjectIndex(projects)
    idx.scan()
    assert len(idx.files) == len(files) == 5 + 4 * COPIES
    assert reads[0] == 0  # every file was read on a worker process and restored from the database here
    assert _loaded(idx) == 0

    own = ProjectIndex(projects, persist=False)  # reads every file itself
    own.scan()
    diags = idx.all_diagnostics()
    assert diags == own.all_diagnostics()
    assert {"invalid-json", "dangling-leaf", "unreachable-branch"} <= {d.code for d in diags}
    assert _loaded(idx) == 0  # the checks and the uuids came from the database: no file's rows were loaded

    summaries = _counting(monkeypatch, indexedlist, "read_session_info")
    sums = _counting(monkeypatch, usage, "session_usage_json")
    listed = indexedlist.list_sessions_indexed(projects)
    totals = sessions_usage_indexed(listed)
    assert (summaries[0], sums[0]) == (0, 0)  # nothing summarised or summed again
    monkeypatch.setenv("SESSION_LSP_NO_CACHE", "1")
    plain = list_sessions(projects)
    assert [s.to_json() for s in listed] == [s.to_json() for s in plain] and len(plain) == 4 + 3 * COPIES
    assert totals == usage.sessions_usage_json(plain)


def test_homes_are_found_without_loading_rows(projects: Path) -> None:
    ProjectIndex(projects).scan()  # fills the database
    idx = ProjectIndex(projects)
    idx.scan()  # restored from it
    probe = ProjectIndex(projects, persist=False)
    probe.scan()
    uuids = sorted({u for s in probe.files.values() for u in s.transcript.nodes if u})[:40]
    found = [idx.homes(u) for u in uuids]
    assert _loaded(idx) == 0
    assert found == [[(p, r.line) for p, r in probe.find_uuid(u)] for u in uuids]
    assert all(found)


def test_discovered_files_are_not_resolved_again(projects: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    resolved = _counting(monkeypatch, store, "stays_inside")
    idx = ProjectIndex(projects, persist=False)
    idx.scan()
    assert len(idx.files) == 5 + 4 * COPIES and resolved[0] == 0  # no link on the way: nothing resolved
    named = ProjectIndex(projects, persist=False)
    named.scan(paths=sorted(projects.rglob("*.jsonl")))
    assert resolved[0] == len(named.files)  # a path named by the caller is always resolved


GATE = "SESSION_LSP_TEST_LISTING_GATE"


def _gated_summaries(*args: Any) -> Any:
    """The listing of a task, read once the test opens the gate (a file): on a worker process, for at most 20 s."""
    gate = Path(os.environ[GATE])
    for _ in range(400):
        if gate.exists():
            break
        time.sleep(0.05)
    opened = gate.exists()
    listed = ORIGINAL_SUMMARIES(*args)
    niceness = os.getpriority(os.PRIO_PROCESS, 0)
    (gate.parent / f"listed-{os.getpid()}-{time.monotonic_ns()}").write_text(f"{opened} {niceness}")
    return listed


ORIGINAL_SUMMARIES = fill._summaries


def test_the_first_index_is_complete_before_the_listing_is_read(
    projects: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = tmp_path / "gate" / "open"
    gate.parent.mkdir()
    monkeypatch.setenv(GATE, str(gate))
    monkeypatch.setattr(fill, "_summaries", _gated_summaries)  # the workers are forked with it
    idx = ProjectIndex(projects)
    idx.scan()  # returns with the index stored and restored, the listing's tasks waiting at the gate
    with IndexDB.open() as db:
        assert db is not None and db.files() == {} and db.usages([str(p) for p in projects.rglob("*.jsonl")]) == {}
    own = ProjectIndex(projects, persist=False)
    own.scan()
    assert idx.all_diagnostics() == own.all_diagnostics() and _loaded(idx) == 0
    assert not any(gate.parent.glob("listed-*"))  # no listing task got past the gate yet

    gate.touch()
    summaries = _counting(monkeypatch, indexedlist, "read_session_info")
    listed = indexedlist.list_sessions_indexed(projects)  # waits for the listing, then takes it from the database
    assert summaries[0] == 0
    passed = [p.read_text() for p in gate.parent.glob("listed-*")]
    # every listing task ran after the scan had returned, on a worker yielding to the index's process
    assert passed and set(passed) == {f"True {max(fill.LISTING_NICE, os.getpriority(os.PRIO_PROCESS, 0))}"}
    monkeypatch.setenv("SESSION_LSP_NO_CACHE", "1")
    assert [s.to_json() for s in listed] == [s.to_json() for s in list_sessions(projects)]
