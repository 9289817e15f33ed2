"""A session view grown as its transcript is appended to equals the view built in full from the same rows,
at every step of any chunking (torn lines, duplicate uuids, rewinds), and shares what the append left alone."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from conftest import CORPUS

from server.features.tree import TreeView
from server.index.filestate import FileState

SHOP = CORPUS / "projects" / "-Users-me-shop"
SESSIONS = sorted(SHOP.glob("*.jsonl"))


def picture(view: TreeView) -> dict[str, Any]:
    """Everything a view answers with, as plain values."""
    t = view.transcript
    return {
        "json": view.to_json(),
        "chain": [r.uuid for r in view.chain.rows],
        "stop": view.chain.stop,
        "recovered": [r.uuid for r in view.chain.recovered],
        "on_chain": sorted(view.on_chain, key=str),
        "children": {k: [r.uuid for r in v] for k, v in sorted(view.children.items())},
        "depth": {r.uuid: view.depth(r) for r in t.nodes.values()},
        "branch_of": {r.uuid: (b.uuid if (b := view.branch_of(r)) else None) for r in t.nodes.values()},
    }


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("source", SESSIONS, ids=lambda p: p.stem[:8])
def test_grown_view_equals_full_build_at_every_step(tmp_path: Path, source: Path, seed: int) -> None:
    data = source.read_bytes()
    data += data[: len(data) // 3]  # the file's head again: every uuid repeated, then a torn tail
    path = tmp_path / source.name
    path.write_bytes(b"")
    state = FileState(path)
    state.refresh()
    view = TreeView.of(state.transcript)
    rnd = random.Random(seed)
    pos = steps = shared = 0
    while pos < len(data):
        step = rnd.randint(1, 3000)
        with open(path, "ab") as fh:
            fh.write(data[pos : pos + step])
        pos += step
        state.refresh()
        before = picture(view)
        grown = view.grown(state.transcript)
        assert picture(view) == before  # the previous view is left as its readers saw it
        assert grown.covers(state.transcript)
        assert picture(grown) == picture(TreeView.of(state.transcript))
        if grown.transcript is view.transcript and grown.children is not view.children:
            shared += sum(1 for k, v in grown.children.items() if view.children.get(k) is v)
        view, steps = grown, steps + 1
    assert steps > 1
    assert shared > 0  # lists of parents that got no new child were reused, not rebuilt


def test_append_grows_children_in_place_of_a_rebuild(tmp_path: Path) -> None:
    source = max(SESSIONS, key=lambda p: p.stat().st_size)
    lines = source.read_bytes().splitlines(keepends=True)
    path = tmp_path / source.name
    path.write_bytes(b"".join(lines[:-5]))
    state = FileState(path)
    state.refresh()
    view = TreeView.of(state.transcript)
    with open(path, "ab") as fh:
        fh.writelines(lines[-5:])
    state.refresh()
    assert not view.covers(state.transcript)
    grown = view.grown(state.transcript)
    fresh = TreeView.of(state.transcript)
    new_parents = {r.parent for r in state.transcript.rows[-5:] if r.parent}
    untouched = [k for k in view.children if k not in new_parents]
    assert untouched
    assert all(grown.children[k] is view.children[k] for k in untouched)
    assert not any(fresh.children[k] is view.children[k] for k in untouched)
    assert picture(grown) == picture(fresh)
    assert grown.grown(state.transcript) is grown  # nothing new: the same view


def test_a_replaced_transcript_is_built_in_full(tmp_path: Path) -> None:
    source = SESSIONS[0]
    path = tmp_path / source.name
    path.write_bytes(source.read_bytes())
    state = FileState(path)
    state.refresh()
    view = TreeView.of(state.transcript)
    lines = source.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[: len(lines) // 2]))  # truncated: the index reloads it
    state.refresh()
    assert not view.covers(state.transcript)
    grown = view.grown(state.transcript)
    assert grown.transcript is state.transcript
    assert picture(grown) == picture(TreeView.of(state.transcript))
