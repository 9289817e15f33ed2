"""The listing that reads no file whole (`storage.headlist`, `storage.partiallist`): through `list --partial`,
and through `sessions/list {partial: true}` on a server whose first index is not complete."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from server.features.requests import SessionRequests
from server.index.store import ProjectIndex

GENERATED = Path(__file__).parent / "corpus" / "generated" / "projects"
COMPACTED_SOURCE = "11111111-1111-4111-8111-111111111111"


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("SESSION_LSP_NO_CACHE", raising=False)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "server.cli", *args], capture_output=True, text=True)


def _agree(partial: dict[str, Any], whole: dict[str, Any]) -> list[str]:
    """The fields a partial item gives (all equal to the whole item's); pending ones must be null."""
    given = []
    for name, value in partial.items():
        if name in ("partial", "pending"):
            continue
        if name in partial.get("pending", []):
            assert value is None, (name, value)
        else:
            assert value == whole[name], (partial["sessionId"], name, value, whole[name])
            given.append(name)
    return given


def test_list_partial_on_the_command_line(corpus_projects: Path) -> None:
    table = _cli("list", "--partial", "--projects-dir", str(corpus_projects))
    rows = [line for line in table.stdout.splitlines() if re.match(r"[0-9a-f-]{36} ", line)]
    assert table.returncode == 0 and len(rows) == 4 and all(re.search(r" … +\d", r) for r in rows), table.stdout
    quick = _cli("list", "--partial", "--json", "--projects-dir", str(corpus_projects))
    assert quick.returncode == 0, quick.stderr
    whole = _cli("list", "--json", "--projects-dir", str(corpus_projects))
    partial_items, whole_items = json.loads(quick.stdout), json.loads(whole.stdout)
    assert [i["sessionId"] for i in partial_items] == [i["sessionId"] for i in whole_items] and len(whole_items) == 4
    assert all(i["partial"] and i["messageCount"] is None and i["usage"] is None for i in partial_items)
    assert all("partial" not in i for i in whole_items)  # the plain `list` stays whole
    for p, w in zip(partial_items, whole_items, strict=True):
        assert {"title", "cwd", "created", "modified", "leafUuid", "subagents", "sizeBytes"} <= set(_agree(p, w))
    # the whole listing kept counts and usage in the index database: a partial listing now takes them from there
    again = json.loads(_cli("list", "--partial", "--json", "--projects-dir", str(corpus_projects)).stdout)
    for p, w in zip(again, whole_items, strict=True):
        assert "messageCount" not in p.get("pending", []) and p["messageCount"] == w["messageCount"] > 0
        assert "usage" not in p.get("pending", []) and p["usage"] == w["usage"]
    bad = _cli("list", "--partial", "--store", "postgresql://127.0.0.1:1/none", "--projects-dir", str(corpus_projects))
    assert bad.returncode == 2 and "--partial" in bad.stderr


def test_a_fork_only_the_index_can_link_is_pending_not_guessed(tmp_path: Path) -> None:
    """A `--fork-session` copy of a compacted session starts at a compact boundary: only the whole of other files
    (or the server's index) says whose copy it is, so a partial listing leaves `forkedFrom` pending."""
    gen = tmp_path / "gen"
    shutil.copytree(GENERATED, gen)
    index = ProjectIndex(gen)
    indexed = False
    requests = SessionRequests(gen, find_uuids=index.homes_many, indexed=lambda: indexed)
    early = requests.list({"partial": True})
    index.scan()
    indexed = True
    whole = requests.list({"partial": True})
    assert early["partial"] is True and whole["partial"] is False
    forks = [i for i in whole["sessions"] if i["forkedFrom"] == {"sessionId": COMPACTED_SOURCE, "messageUuid": None}]
    assert len(forks) == 1
    copy = next(i for i in early["sessions"] if i["sessionId"] == forks[0]["sessionId"])
    assert copy["forkedFrom"] is None and "forkedFrom" in copy["pending"]
    by_id = {i["sessionId"]: i for i in whole["sessions"]}
    assert len(early["sessions"]) == len(whole["sessions"]) == 7
    for item in early["sessions"]:
        _agree(item, by_id[item["sessionId"]])
