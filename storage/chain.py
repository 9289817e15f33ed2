"""The chain that `claude --resume` rebuilds from a transcript (CLI 2.1.328 behaviour).

Leaf choice, the parent walk with its seen-set and 5 s timestamp fallback, progress bridging,
compact boundaries, recovery of orphaned parallel tool calls and results, preserved segments.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

import msgspec

from storage.reader import read_entries
from storage.rows import CHAIN_TYPES, Row
from storage.transcript import Transcript

FALLBACK_SECONDS = 5.0
WALKED = CHAIN_TYPES | {"progress"}
"""Row types the CLI links a conversation through (progress rows are bridged, never sent)."""


@dataclass
class Chain:
    leaf: Row | None
    rows: list[Row] = field(default_factory=list)
    stop: str = "empty"
    """Why the walk ended: root, compact-boundary, cycle, missing-parent, empty."""
    fallbacks: list[tuple[Row, Row]] = field(default_factory=list)
    """(child, adopted parent) pairs where a missing parent was bridged by timestamp."""
    recovered: list[Row] = field(default_factory=list)
    """Rows put back by the orphaned parallel tool call step."""
    preserved: list[Row] = field(default_factory=list)
    """Rows relinked from a compact boundary's preserved segment."""

    @property
    def uuids(self) -> list[str]:
        return [r.uuid for r in self.rows if r.uuid]

    @property
    def boundary(self) -> Row | None:
        return self.rows[0] if self.rows and self.rows[0].is_compact_boundary else None


def parse_ts(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _to_message_row(t: Transcript, row: Row) -> Row:
    """Walk back from a non-user/assistant pick to the nearest user/assistant row, or a slash command's output
    row (the CLI resumes a session whose `last-prompt` names one, after `/rename`, with that output sent)."""
    seen: set[str] = set()
    cur: Row | None = row
    while cur is not None and cur.uuid not in seen:
        if cur.is_message or cur.is_local_command:
            return cur
        seen.add(cur.uuid or "")
        cur = t.nodes.get(cur.parent) if cur.parent else None
    return row


def _is_explicit(t: Transcript, row: Row) -> bool:
    """A `last-prompt` row written with `explicit: true` (a rewind or fork point)."""
    try:
        entry = read_entries(t.path, [row])[0]
    except (OSError, ValueError, IndexError):
        return False
    return isinstance(entry, dict) and entry.get("explicit") is True


def _descends_from(t: Transcript, row: Row, ancestor: str) -> bool:
    seen: set[str] = set()
    cur: Row | None = row
    while cur is not None and cur.uuid not in seen:
        if cur.uuid == ancestor:
            return True
        seen.add(cur.uuid or "")
        cur = t.nodes.get(cur.parent) if cur.parent else None
    return False


def _last_lines(t: Transcript) -> Iterator[Row]:
    """Rows with a uuid from the file's last line up, each as its uuid's latest value: a uuid written
    twice counts at its later line here (the CLI 2.1.328 took a row copied to the end of a file as
    the last one, tests/corpus/mutations), although it keeps its first position in the walk."""
    nodes = t.nodes
    for row in reversed(t.rows):
        if row.uuid is not None and row.uuid in nodes:
            yield nodes[row.uuid]


def _down_to_tip(t: Transcript, row: Row) -> Row:
    """From `row` down through its latest child, as long as it has one: the last message line of a file
    can be a copy of an earlier row, and the CLI 2.1.328 then resumed the branch below it."""
    children: dict[str, list[Row]] = {}
    for child in t.nodes.values():
        if child.parent is not None and child.is_chain_row and not child.sidechain:
            children.setdefault(child.parent, []).append(child)
    seen: set[str] = set()
    while row.uuid not in seen and (below := children.get(row.uuid or "")):
        seen.add(row.uuid or "")
        row = max(below, key=lambda r: r.order)
    return row


def choose_leaf(t: Transcript) -> Row | None:
    """Last existing `last-prompt.leafUuid` (but the file's last chain row when that row descends
    from it and the checkpoint is not explicit, as after a killed turn); else the last main-chain
    user/assistant line, followed down to the tip of its branch; else the newest row that nothing
    points at."""
    nodes = t.nodes
    for row in reversed(t.rows):
        if row.type == "last-prompt" and row.leaf_uuid and row.leaf_uuid in nodes:
            pick = nodes[row.leaf_uuid]
            last = next((r for r in _last_lines(t) if r.is_chain_row and not r.sidechain), None)
            if (
                last is not None
                and last is not pick
                and _descends_from(t, last, row.leaf_uuid)
                and not _is_explicit(t, row)
            ):
                pick = last
            return _to_message_row(t, pick)
    for row in _last_lines(t):
        if row.is_message and not row.sidechain:
            return _to_message_row(t, _down_to_tip(t, row))
    parents = {r.parent for r in nodes.values() if r.parent}
    tips = [r for r in nodes.values() if r.is_chain_row and r.uuid not in parents]
    if not tips:
        return None
    best = max(tips, key=lambda r: (parse_ts(r.timestamp) or 0.0, r.order))
    return _to_message_row(t, best)


def _fallback_parent(t: Transcript, child: Row, seen: set[str]) -> Row | None:
    """The newest earlier row of the same sidechain-ness at most 5 s older than `child` (the first of
    several as new: a compact boundary before its summary, as CLI 2.1.328 picks)."""
    child_ts = parse_ts(child.timestamp)
    if child_ts is None:
        return None
    best: Row | None = None
    best_ts = float("-inf")
    for row in t.nodes.values():
        if row.order >= child.order or row.uuid in seen or not row.is_chain_row:
            continue
        if row.sidechain != child.sidechain or row.type == "progress":
            continue
        ts = parse_ts(row.timestamp)
        if ts is None or ts > child_ts or child_ts - ts > FALLBACK_SECONDS:
            continue
        if ts > best_ts:  # of rows written in the same millisecond, the first in the file
            best, best_ts = row, ts
    return best


def walk(t: Transcript, leaf: Row) -> Chain:
    """The parent walk from `leaf`, reversed into conversation order (no recovery steps)."""
    chain = Chain(leaf=leaf)
    out: list[Row] = []
    seen: set[str] = set()
    cur: Row | None = leaf
    while cur is not None:
        if cur.uuid in seen:
            chain.stop = "cycle"
            break
        seen.add(cur.uuid or "")
        if cur.type != "progress":
            out.append(cur)
        if cur.is_compact_boundary:
            chain.stop = "compact-boundary"
            break
        if cur.parent is None:
            chain.stop = "root"
            break
        nxt = t.nodes.get(cur.parent)
        if nxt is None:
            nxt = _fallback_parent(t, cur, seen)
            if nxt is None:
                chain.stop = "missing-parent"
                break
            chain.fallbacks.append((cur, nxt))
        cur = nxt
    out.reverse()
    chain.rows = out
    return chain


def _ts_key(row: Row) -> tuple[float, int]:
    return (parse_ts(row.timestamp) or 0.0, row.order)


def recover_parallel(t: Transcript, chain: Chain) -> None:
    """Put back sibling rows of one response and the tool results hanging off them."""
    rows = chain.rows
    last_index: dict[str, int] = {}
    for i, row in enumerate(rows):
        if row.type == "assistant" and row.message_id:
            last_index[row.message_id] = i
    if not last_index:
        return
    on_chain = {r.uuid for r in rows}
    # Only the responses on the chain matter: one pass over the file's rows collects their members and
    # every tool result row, which are then kept for the members' uuids (file order throughout).
    by_message: dict[str, list[Row]] = {}
    answers: list[Row] = []
    for row in t.nodes.values():
        if row.type == "assistant":
            mid = row.message_id
            if mid is not None and mid in last_index:
                by_message.setdefault(mid, []).append(row)
        elif row.type == "user" and row.tool_result_ids:
            answers.append(row)
    members_of: dict[str, list[Row]] = {}
    anchors: set[str] = set()
    for mid, idx in last_index.items():
        sidechain = rows[idx].sidechain
        members = [r for r in by_message.get(mid, ()) if r.sidechain == sidechain]
        members_of[mid] = members
        anchors.update(r.uuid for r in members if r.uuid)
    results_of: dict[str, list[Row]] = {}
    for row in answers:
        for anchor in {row.parent, row.source_tool_assistant}:
            if anchor and anchor in anchors:
                results_of.setdefault(anchor, []).append(row)
    inserts: list[tuple[int, list[Row]]] = []
    for mid, idx in last_index.items():
        members = members_of[mid]
        siblings = sorted((r for r in members if r.uuid not in on_chain), key=_ts_key)
        for r in siblings:
            on_chain.add(r.uuid)
        results: list[Row] = []
        for member in members:
            for res in results_of.get(member.uuid or "", ()):
                if res.uuid not in on_chain:
                    on_chain.add(res.uuid)
                    results.append(res)
        results.sort(key=_ts_key)
        if siblings or results:
            inserts.append((idx, siblings + results))
    for idx, extra in sorted(inserts, key=lambda x: x[0], reverse=True):
        rows[idx + 1 : idx + 1] = extra
        chain.recovered.extend(extra)


def preserved_segment(t: Transcript, boundary: Row) -> list[Row]:
    """The rows a compact boundary keeps, head to tail (by their links, else as it lists them)."""
    if boundary.preserved is None:
        return []
    _, head, tail, listed = boundary.preserved
    segment: list[Row] = []
    if head and tail and head in t.nodes and tail in t.nodes:
        cur: Row | None = t.nodes[tail]
        seen: set[str] = set()
        while cur is not None and cur.uuid not in seen:
            seen.add(cur.uuid or "")
            segment.append(cur)
            if cur.uuid == head:
                break
            cur = t.nodes.get(cur.parent) if cur.parent else None
        segment.reverse()
        if not segment or segment[0].uuid != head:
            segment = []
    return segment or [t.nodes[u] for u in listed if u in t.nodes]


def relink_preserved(t: Transcript, chain: Chain) -> None:
    """After the chain's compact boundary, put the preserved rows right after their anchor."""
    boundary = chain.boundary
    if boundary is None or boundary.preserved is None:
        return
    anchor = boundary.preserved[0]
    present = {r.uuid for r in chain.rows}
    segment = [r for r in preserved_segment(t, boundary) if r.uuid not in present and r.type != "progress"]
    if not segment:
        return
    at = next((i for i, r in enumerate(chain.rows) if r.uuid == anchor), 0)
    chain.rows[at + 1 : at + 1] = segment
    chain.preserved = segment


def _kept_compaction(t: Transcript) -> tuple[Row, list[Row]] | None:
    """The file's last compact boundary and the segment it preserved, when it preserved one."""
    last = next((r for r in reversed(t.rows) if r.is_compact_boundary), None)
    boundary = t.nodes.get(last.uuid or "", last) if last is not None else None
    if boundary is None or boundary.preserved is None or not boundary.preserved[0]:
        return None
    segment = preserved_segment(t, boundary)
    return (boundary, segment) if segment else None


def resume_view(t: Transcript) -> Transcript:
    """The rows and links `claude --resume` walks (CLI 2.1.328, tests/corpus/mutations); `t` itself when
    they are the file's. Only conversation rows (and progress rows) are in it: a row with a uuid but
    another `type` (a number, an unknown name) is a missing parent. When the file's last compact boundary
    keeps a preserved segment, every row before that boundary is gone but the segment, whose head hangs
    from the anchor (the summary) and whose tail takes the anchor's other children: a walk that misses
    the summary (a torn line) or the boundary (a parent that points nowhere) never reaches the rows before
    the compaction. `t` is not changed: a row whose parent moves is a copy."""
    kept = _kept_compaction(t)
    if kept is None and all(row.type in WALKED for row in t.nodes.values()):
        return t
    cut, anchor, tail = -1, None, None
    links: dict[str | None, str | None] = {}
    if kept is not None:
        boundary, segment = kept
        cut, anchor, tail = boundary.order, boundary.preserved[0] if boundary.preserved else None, segment[-1].uuid
        links = {segment[0].uuid: anchor, **{row.uuid: prev.uuid for prev, row in zip(segment, segment[1:])}}
    view = Transcript(path=t.path, problems=t.problems, torn_tail=t.torn_tail, duplicates=t.duplicates)
    for uid, row in t.nodes.items():
        if row.type not in WALKED or (row.order < cut and uid not in links):
            continue
        parent = links[uid] if uid in links else tail if anchor and row.parent == anchor else row.parent
        view.nodes[uid] = row if parent == row.parent else msgspec.structs.replace(row, parent=parent)
    view.rows = [r for r in t.rows if r.uuid is None or r.uuid in view.nodes]
    return view


def build_chain(t: Transcript, leaf_uuid: str | None = None) -> Chain:
    """The chain resume rebuilds, from `leaf_uuid` or the CLI's own leaf choice (then over the rows and
    links the CLI keeps after the last compaction, see `resume_view`)."""
    view = t if leaf_uuid else resume_view(t)  # a row named (a fork point, a stretch of history): the file's links
    leaf = t.nodes.get(leaf_uuid) if leaf_uuid else choose_leaf(t)
    if leaf is not None:
        # chosen over the whole file, walked over what the CLI keeps: a leaf from before the last
        # compaction gives an empty conversation (CLI 2.1.328 on a shuffled compacted file)
        leaf = view.nodes.get(leaf.uuid or "")
    if leaf is None:
        return Chain(leaf=None)
    chain = walk(view, leaf)
    if view is t:
        relink_preserved(t, chain)
    elif chain.boundary is not None:
        kept = {r.uuid for r in preserved_segment(t, chain.boundary)}
        chain.preserved = [r for r in chain.rows if r.uuid in kept]
    recover_parallel(view, chain)
    return chain
