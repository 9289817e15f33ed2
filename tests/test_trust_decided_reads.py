"""A session file swapped for a symlink after `storage.access` decided it is never read through the link.

The race is made deterministic: the decision point the requests call (`resolve_target`, as imported by
`server.features.requests` and `storage.lookup`) is wrapped so that right after the real decision the
decided file (or its project folder) is replaced by a symlink to a transcript outside the projects
folder. Every request then reads the decided path; before, a plain `open` followed the link and
answered with the outside session (its id `OUT`); now each read opens the decided path folder by
folder without following a link, and the request is refused with `Unsafe`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CORPUS

import server.features.requests as requests_module
import storage.access as access
import storage.lookup as lookup
from server.features.requests import SessionRequests
from storage.errors import Unsafe
from storage.resume import resume

SHOP = "-Users-me-shop"
S1 = "11111111-1111-4111-8111-111111111111"
OUT = "44444444-4444-4444-8444-444444444444"


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    projects = tmp_path / "config" / "projects"
    shutil.copytree(CORPUS / "projects", projects)
    outside = tmp_path / "outside"
    (outside / SHOP).mkdir(parents=True)
    session = (projects / SHOP / f"{S1}.jsonl").read_bytes()
    # the same conversation under another id, in a folder of the same name outside
    (outside / SHOP / f"{S1}.jsonl").write_bytes(session.replace(S1.encode(), OUT.encode()))
    return {"projects": projects, "outside": outside}


def swapping(world: dict[str, Path], what: str) -> Callable[..., Path]:
    """`resolve_target` that, once it decided, swaps the file (`what="file"`) or its project folder
    (`what="folder"`) for a symlink to the outside copy."""

    def decide_then_swap(*args: Any, **kwargs: Any) -> Path:
        decided = access.resolve_target(*args, **kwargs)
        if what == "file":
            os.rename(decided, decided.with_name("moved-away"))
            decided.symlink_to(world["outside"] / SHOP / decided.name)
        else:
            os.rename(decided.parent, decided.parent.with_name("moved-away"))
            decided.parent.symlink_to(world["outside"] / SHOP, target_is_directory=True)
        return decided

    return decide_then_swap


REQUESTS = ["chain", "resume", "tree", "conversation"]


@pytest.mark.parametrize("what", ["file", "folder"])
@pytest.mark.parametrize("request_name", REQUESTS)
def test_a_request_never_reads_a_link_swapped_in_after_the_decision(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch, request_name: str, what: str
) -> None:
    monkeypatch.setattr(requests_module, "resolve_target", swapping(world, what))
    requests = SessionRequests(world["projects"])
    with pytest.raises(Unsafe, match="symbolic link"):
        answer = getattr(requests, request_name)({"sessionId": S1})
        pytest.fail(f"{request_name} answered through the link: {str(answer)[:200]} (has {OUT}: {OUT in str(answer)})")


@pytest.mark.parametrize("what", ["file", "folder"])
def test_the_command_lines_lookup_never_reads_a_link_swapped_in_after_the_decision(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    monkeypatch.setattr(lookup, "resolve_target", swapping(world, what))
    path = lookup.resolve_session(world["projects"], S1)
    with pytest.raises(Unsafe, match="symbolic link"):
        resumed = resume(path)
        pytest.fail(f"resume read through the link: session {resumed.transcript.session_id}")


def test_an_unswapped_decided_session_still_reads(world: dict[str, Path]) -> None:
    requests = SessionRequests(world["projects"])
    assert requests.chain({"sessionId": S1})["sessionId"] == S1
    assert requests.tree({"sessionId": S1})["sessionId"] == S1
    assert requests.conversation({"sessionId": S1})["items"]
