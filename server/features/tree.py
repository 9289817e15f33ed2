"""A session's tree as the editor shows it: the resume chain, children, depth, branch points, and
the subagent conversations that CLIs before 2.0 kept inline (`isSidechain` rows of a main file)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from storage.chain import Chain, build_chain
from storage.reader import read_entries
from storage.rows import Row
from storage.transcript import Transcript

SUBAGENT_TOOLS = ("Task", "Agent")
"""The tool that starts a subagent (`Task` before CLI 2.1)."""


def is_turn_start(row: Row) -> bool:
    """A user row that a person typed (not a tool result, meta row or compact summary)."""
    return row.type == "user" and not row.tool_result_ids and not row.is_meta and not row.is_compact_summary


def is_continuation(row: Row) -> bool:
    """A child that continues the conversation (counts towards a branch)."""
    return row.type == "assistant" or is_turn_start(row)


@dataclass
class _Links:
    """What a hover asks of the whole file, kept by id instead of a scan of every row per hover (a 100 MB
    transcript's hover took 3-8 ms scanning): for each tool id the first row (in the file order of the uuid map)
    that calls it and the first that answers it, and how many rows each API response (`message.id`) is stored as.
    Built from the rows a view covers (a list the index only appends to), never by iterating the uuid map, which the
    index's watcher grows meanwhile."""

    calls: dict[str, Row] = field(default_factory=dict)
    results: dict[str, Row] = field(default_factory=dict)
    responses: dict[str, int] = field(default_factory=dict)

    def extended(self, transcript: Transcript, rows: list[Row]) -> _Links:
        """A copy with `rows` (appended to the transcript since) added; this one stays as it is."""
        links = _Links(dict(self.calls), dict(self.results), dict(self.responses))
        nodes = transcript.nodes
        for row in rows:
            if row.message_id is not None:
                links.responses[row.message_id] = links.responses.get(row.message_id, 0) + 1
            if row.uuid is None or nodes.get(row.uuid) is not row:
                continue
            for found, tids in ((links.calls, row.tool_use_ids), (links.results, row.tool_result_ids)):
                for tid in tids:
                    first = found.get(tid)
                    if first is None or row.order < first.order:  # a repeated uuid's row sits at the first's place
                        found[tid] = row
        return links


@dataclass
class TreeView:
    transcript: Transcript
    chain: Chain
    on_chain: set[str] = field(default_factory=set)
    children: dict[str, list[Row]] = field(default_factory=dict)
    _depth: dict[str, int] = field(default_factory=dict)
    _seen: int = 0
    """How many of the transcript's rows this view covers."""
    _last: Row | None = None
    """The last of those rows (a dropped unterminated row no longer sits at its place)."""
    _duplicates: int = 0
    _links: _Links | None = None
    """Tool calls, their results and rows per API response, by id: built at the first hover that asks."""

    @classmethod
    def of(cls, transcript: Transcript) -> TreeView:
        chain = build_chain(transcript)
        view = cls(transcript, chain, set(chain.uuids), transcript.children())
        view._mark_seen()
        return view

    def _mark_seen(self, end: int | None = None, duplicates: int | None = None) -> None:
        """This view covers the transcript's first `end` rows (default: all of them now), `duplicates` its repeated
        uuids then."""
        t = self.transcript
        end = len(t.rows) if end is None else end
        self._seen, self._last = end, t.rows[end - 1] if end else None
        self._duplicates = len(t.duplicates) if duplicates is None else duplicates

    def covers(self, transcript: Transcript) -> bool:
        """Whether this view is the one `of(transcript)` would build now (nothing added or dropped since)."""
        return self.transcript is transcript and self._unchanged_prefix() and self._seen == len(transcript.rows)

    def _unchanged_prefix(self) -> bool:
        """The rows this view covers are still the transcript's first rows, none of them replaced."""
        rows = self.transcript.rows
        if len(rows) < self._seen or len(self.transcript.duplicates) != self._duplicates:
            return False
        return self._seen == 0 or rows[self._seen - 1] is self._last

    def grown(self, transcript: Transcript) -> TreeView:
        """The view of `transcript` now. When it is the same transcript with rows appended (no uuid repeated,
        no row dropped), the children map is extended rather than rebuilt, sharing every untouched list with
        this view, which stays valid for its readers; otherwise a full build. The chain is always walked again:
        one appended row can move the leaf."""
        # the rows it covers are counted once, first: the index's thread appends meanwhile, and what is appended
        # after this count is for the next view (before, the rows appended while this view was built were counted
        # as covered but left out of its children and lookups, for good). The repeated uuids are counted before the
        # rows: a row that repeats one, appended meanwhile, is then counted as a change by the next view.
        duplicates = len(transcript.duplicates)
        end = len(transcript.rows)
        if transcript is not self.transcript or not self._unchanged_prefix():
            return TreeView.of(transcript)
        if self._seen == end:
            return self
        added = transcript.rows[self._seen : end]
        children = dict(self.children)
        copied: set[str] = set()
        nodes = transcript.nodes
        for row in added:
            parent = row.parent
            if parent is None or row.uuid is None or nodes.get(row.uuid) is not row:
                continue
            if parent not in copied:
                children[parent] = [*children.get(parent, ())]
                copied.add(parent)
            children[parent].append(row)
        chain = build_chain(transcript)
        view = TreeView(transcript, chain, set(chain.uuids), children, dict(self._depth))
        if self._links is not None:
            view._links = self._links.extended(transcript, added)
        view._mark_seen(end, duplicates)
        return view

    def links(self) -> _Links:
        """The view's lookups by tool id and response id (one pass over the rows the first time)."""
        if self._links is None:
            self._links = _Links().extended(self.transcript, self.transcript.rows[: self._seen])
        return self._links

    def depth(self, row: Row) -> int:
        """Number of ancestors reachable through parent links (a cycle stops the count)."""
        nodes = self.transcript.nodes
        path: list[str] = []
        seen: set[str] = set()
        cur: Row | None = row
        base = 0
        while cur is not None and cur.uuid and cur.uuid not in seen:
            if cur.uuid in self._depth:
                base = self._depth[cur.uuid] + 1
                break
            seen.add(cur.uuid)
            path.append(cur.uuid)
            cur = nodes.get(cur.parent) if cur.parent else None
        for i, uid in enumerate(reversed(path)):
            self._depth[uid] = base + i
        return self._depth.get(row.uuid or "", 0)

    def branch_points(self) -> list[Row]:
        nodes = self.transcript.nodes
        out = []
        for uid, kids in self.children.items():
            if uid in nodes and sum(1 for k in kids if is_continuation(k)) > 1:
                out.append(nodes[uid])
        return sorted(out, key=lambda r: r.line)

    def branch_of(self, row: Row) -> Row | None:
        """For a row off the chain: the nearest ancestor on the chain (where its branch starts)."""
        nodes = self.transcript.nodes
        seen: set[str] = set()
        cur: Row | None = row
        while cur is not None and cur.uuid not in seen:
            seen.add(cur.uuid or "")
            if cur.uuid in self.on_chain:
                return cur
            cur = nodes.get(cur.parent) if cur.parent else None
        return None

    def is_inline_subagent(self, row: Row) -> bool:
        """A subagent's row kept in the main file (the session's own chain is not a sidechain)."""
        leaf = self.chain.leaf
        return row.sidechain and (leaf is None or not leaf.sidechain)

    def inline_subagents(self) -> list[dict[str, Any]]:
        """Each inline subagent conversation: its first row, its rows' uuids in file order, and the
        call that started it (`toolUseId`, `callUuid`; None when no call has its prompt)."""
        nodes = self.transcript.nodes
        rows = [r for r in nodes.values() if r.is_chain_row and self.is_inline_subagent(r)]
        rows.sort(key=lambda r: r.order)
        groups: dict[str, list[str]] = {}
        root_of: dict[str, str] = {}
        for r in rows:
            root = root_of.get(r.parent or "") if r.parent else None
            root = root or (r.uuid or "")
            root_of[r.uuid or ""] = root
            groups.setdefault(root, []).append(r.uuid or "")
        if not groups:
            return []
        calls = self._subagent_calls()
        out = []
        for root, uuids in groups.items():
            prompt = self._prompt_of(nodes[root])
            waiting = calls.get(prompt, []) if prompt is not None else []
            call = waiting.pop(0) if waiting else None  # same prompt twice: calls in file order
            out.append({"rootUuid": root, "uuids": uuids, "toolUseId": call[0] if call else None,
                        "callUuid": call[1] if call else None})  # fmt: skip
        return out

    def _prompt_of(self, row: Row) -> str | None:
        entry = read_entries(self.transcript.path, [row])[0]
        message = entry.get("message") if isinstance(entry, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        return content if isinstance(content, str) else None

    def _subagent_calls(self) -> dict[str, list[tuple[str, str]]]:
        """prompt -> [(tool_use id, row uuid)] of the file's main Task/Agent calls, in file order: an
        inline subagent starts with its call's prompt (1.0.x links them no other way)."""
        rows = [r for r in self.transcript.nodes.values() if r.tool_use_ids and not r.sidechain]
        rows.sort(key=lambda r: r.order)
        found: dict[str, list[tuple[str, str]]] = {}
        for row, entry in zip(rows, read_entries(self.transcript.path, rows)):
            message = entry.get("message") if isinstance(entry, dict) else None
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") in SUBAGENT_TOOLS:
                    prompt = (block.get("input") or {}).get("prompt")
                    if isinstance(prompt, str):
                        found.setdefault(prompt, []).append((str(block.get("id")), row.uuid or ""))
        return found

    def label(self, row: Row) -> str:
        kind = ("subagent " if self.is_inline_subagent(row) else "") + (row.type or "?")
        if row.subtype:
            kind += f"/{row.subtype}"
        if row.tool_result_ids:
            kind += " tool result"
        elif row.tool_use_ids:
            kind += " tool call"
        return kind

    def to_json(self) -> dict[str, Any]:
        t = self.transcript
        nodes = [
            {
                "uuid": r.uuid,
                "parentUuid": r.parent,
                "type": r.type,
                "line": r.line,
                "label": self.label(r),
                "onChain": r.uuid in self.on_chain,
                "sidechain": self.is_inline_subagent(r),
            }
            for r in sorted(t.nodes.values(), key=lambda r: r.order)
            if r.is_chain_row or r.type == "progress"
        ]
        return {
            "sessionId": t.session_id or t.path.stem,
            "path": str(t.path),
            "leafUuid": self.chain.leaf.uuid if self.chain.leaf else None,
            "nodes": nodes,
            "branchPoints": [r.uuid for r in self.branch_points()],
            "inlineSubagents": self.inline_subagents(),
        }
