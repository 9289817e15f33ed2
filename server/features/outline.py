"""Turns of a transcript: document symbols, folding ranges and code lenses, as plain data."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from server.features.tree import TreeView, is_turn_start
from storage.reader import read_entries
from storage.rows import Row
from storage.sessions import text_of

MAX_DETAIL_ROWS = 20000


@dataclass
class Item:
    name: str
    kind: str  # "turn" | "reply" | "tool" | "result" | "compaction"
    line: int
    end_line: int
    detail: str = ""
    children: list[Item] = field(default_factory=list)


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def turns(path: Path, view: TreeView) -> list[Item]:
    """One item per turn (a typed prompt up to the next one), with its replies and tool calls."""
    rows = sorted((r for r in view.transcript.rows if r.is_chain_row), key=lambda r: r.line)
    if not rows:
        return []
    last_line = view.transcript.rows[-1].line
    detailed = [r for r in rows if is_turn_start(r) or r.type == "assistant" or r.is_compact_boundary]
    bodies: dict[int, dict[str, Any]] = {}
    if len(detailed) <= MAX_DETAIL_ROWS:
        for r, e in zip(detailed, read_entries(path, detailed)):
            bodies[r.line] = e
    items: list[Item] = []
    current: Item | None = None
    for r in rows:
        entry = bodies.get(r.line, {})
        msg = found if isinstance(found := entry.get("message"), dict) else {}
        if is_turn_start(r) or r.is_compact_boundary or current is None:
            if current is not None:
                current.end_line = max(current.line, r.line - 1)
            if r.is_compact_boundary:
                current = Item("compaction", "compaction", r.line, r.line, detail="compact boundary")
            else:
                text = _short(text_of(msg.get("content"))) if is_turn_start(r) else (r.type or "row")
                on = "" if r.uuid in view.on_chain else " (off the resume chain)"
                current = Item(text or "(prompt)", "turn", r.line, r.line, detail=f"line {r.line + 1}{on}")
            items.append(current)
            continue
        if r.type == "assistant":
            for block in msg.get("content") or []:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and str(block.get("text", "")).strip():
                    current.children.append(Item(_short(block["text"]), "reply", r.line, r.line))
                elif block.get("type") == "tool_use":
                    current.children.append(
                        Item(f"{block.get('name')} call", "tool", r.line, r.line, detail=str(block.get("id")))
                    )
            if not msg and r.tool_use_ids:
                current.children.append(Item("tool call", "tool", r.line, r.line))
        elif r.tool_result_ids:
            current.children.append(Item("tool result", "result", r.line, r.line, detail=r.tool_result_ids[0]))
    if current is not None:
        current.end_line = max(current.line, last_line)
    return items


@dataclass
class Lens:
    line: int
    title: str
    command: str
    arguments: list[Any]


def lenses(view: TreeView) -> list[Lens]:
    """ "Resume from here" on the leaf, "Fork here" on each typed prompt, "N branches" at branch points."""
    t = view.transcript
    sid = t.session_id or t.path.stem
    out: list[Lens] = []
    leaf = view.chain.leaf
    if leaf is not None:
        out.append(Lens(leaf.line, "Resume from here", "sessions/resume", [{"sessionId": sid}]))
    for r in sorted(t.nodes.values(), key=lambda r: r.line):
        if is_turn_start(r) and r.uuid:
            out.append(Lens(r.line, "Fork here", "sessions/fork", [{"sessionId": sid, "atUuid": r.uuid}]))
    for bp in view.branch_points():
        kids = [k for k in view.children.get(bp.uuid or "", []) if k.type in ("user", "assistant")]
        out.append(Lens(bp.line, f"{len(kids)} branches", "sessions/tree", [{"sessionId": sid, "uuid": bp.uuid}]))
    return out


def row_at_line(view: TreeView, line: int) -> Row | None:
    rows = view.transcript.rows
    i = bisect_left(rows, line, key=lambda r: r.line)
    return rows[i] if i < len(rows) and rows[i].line == line else None
