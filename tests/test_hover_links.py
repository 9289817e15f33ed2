"""Hover's lookups by id (`TreeView.links`: a tool call's result, a result's call, the rows of one API response) give
what a scan of every row gives, on every transcript of the corpora (damaged copies with repeated uuids among them)
and on views grown as a file is appended to line by line."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.features.hover import hover_markdown
from server.features.tree import TreeView
from server.index.filestate import FileState
from storage.rows import Row
from storage.transcript import Transcript

CORPUS = Path(__file__).parent / "corpus"
FILES = sorted(p for p in CORPUS.rglob("*.jsonl") if p.name != "api-requests.jsonl")


def _scanned(t: Transcript) -> tuple[dict[str, Row | None], dict[str, Row | None], dict[str, int]]:
    """What hover found before the lookups: the first row of the uuid map holding each id, and the rows of each
    response, by scanning."""
    nodes = list(t.nodes.values())
    ids = {tid for r in t.rows for tid in (*r.tool_use_ids, *r.tool_result_ids)}
    calls = {tid: next((r for r in nodes if tid in r.tool_use_ids), None) for tid in ids}
    results = {tid: next((r for r in nodes if tid in r.tool_result_ids), None) for tid in ids}
    responses = {m: sum(1 for r in t.rows if r.message_id == m) for m in {r.message_id for r in t.rows} if m}
    return calls, results, responses


def _check(view: TreeView) -> int:
    calls, results, responses = _scanned(view.transcript)
    links = view.links()
    for tid in calls:
        assert links.calls.get(tid) is calls[tid], tid
        assert links.results.get(tid) is results[tid], tid
    assert links.responses == responses
    return len(calls)


def _repeated(source: Path, into: Path) -> Path:
    """`source` with its tool calls and results written again at its end (as a rewind or a merge of two copies
    leaves them): copies under new uuids, the first of each under its own uuid with its tool ids renamed, then as it
    was (the uuid map keeps a repeated uuid at its first place: before the copies, though written after them)."""
    lines = source.read_bytes().splitlines(keepends=True)
    tooled = [line for line in lines if b'"tool_use_id"' in line or b'"type":"tool_use"' in line]
    copies = [line.replace(b'"uuid":"', b'"uuid":"copy-') for line in tooled[:5]]
    renamed = [line.replace(b'"toolu_', b'"toolu_again_') for line in tooled]
    into.write_bytes(b"".join([*lines, *copies, *renamed[:5], *tooled[:10]]))
    return into


def test_repeated_uuids_with_tool_ids(tmp_path: Path) -> None:
    checked = 0
    for source in [p for p in FILES if b'"tool_use_id"' in p.read_bytes()][:30]:
        path = _repeated(source, tmp_path / source.name)
        t = Transcript.load(path)
        assert t.duplicates
        checked += _check(TreeView.of(t))
        state = FileState(path)
        state.refresh()
        grown = TreeView.of(Transcript.from_rows(path, state.transcript.rows[: len(t.rows) // 2]))
        grown.links()
        checked += _check(grown.grown(state.transcript))  # repeated uuids came: built again
    assert checked > 100


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_lookups_are_what_a_scan_finds(path: Path) -> None:
    t = Transcript.load(path)
    view = TreeView.of(t)
    _check(view)
    for row in t.rows[:200]:
        hover_markdown(path, view, row)  # reads every row's hover without failing


def test_grown_views_keep_their_lookups(tmp_path: Path) -> None:
    checked = 0
    for source in [p for p in FILES if "mutations" not in p.parts][:40]:
        lines = source.read_bytes().splitlines(keepends=True)
        path = tmp_path / source.name
        path.write_bytes(b"")
        state = FileState(path)
        state.refresh()
        view = TreeView.of(state.transcript)
        view.links()  # built first: every later view extends it
        step = max(1, len(lines) // 7)
        for at in range(0, len(lines), step):
            with open(path, "ab") as fh:
                fh.write(b"".join(lines[at : at + step]))
            state.refresh()
            view = view.grown(state.transcript)
            checked += _check(view)
    assert checked > 200


@pytest.mark.parametrize("when", ["chain", "links"], ids=["while-its-chain-is-walked", "while-its-lookups-grow"])
def test_rows_appended_while_a_view_grows_are_in_the_next_view(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """The index's thread appends rows while the server grows a view (`LspServer.view_of` builds it outside any
    lock). `grown` counted the rows it covers only at its end: rows appended while it walked the chain or extended
    its lookups were counted as covered but were in neither its children nor its lookups, and every later view grew
    from past them (a tool call's hover said "no result" for good). Here the appending is done at those two places."""
    import server.features.tree as tree
    from bench.make_projects import make_transcript

    source = make_transcript(tmp_path, 1, 11)  # about 1 MB of real-shaped rows: tool calls and their results
    rows = Transcript.load(source).rows
    seen: set[str] = set()
    rows = [r for r in rows if r.uuid is None or not (r.uuid in seen or seen.add(r.uuid))]  # no repeats: grown
    t = Transcript.from_rows(source, rows[:2])
    view = TreeView.of(t)
    view.links()
    pending = iter(rows[2:])

    def appended_meanwhile() -> None:
        t.add_rows([row for _, row in zip(range(3), pending, strict=False)])

    if when == "chain":
        walk = tree.build_chain

        def build_chain(transcript: Transcript) -> object:
            appended_meanwhile()
            return walk(transcript)

        monkeypatch.setattr(tree, "build_chain", build_chain)
    else:
        extend = tree._Links.extended

        def extended(self: object, transcript: Transcript, rows: list[Row]) -> object:
            links = extend(self, transcript, rows)  # type: ignore[arg-type]
            appended_meanwhile()
            return links

        monkeypatch.setattr(tree._Links, "extended", extended)
    for row in pending:  # the index's reads, one row each (the appending meanwhile takes the next ones)
        t.add_rows([row])
        view = view.grown(t)
    monkeypatch.undo()
    view = view.grown(t)
    assert len(view.transcript.rows) == len(rows)
    assert _check(view) > 20
    assert view.children == t.children()
