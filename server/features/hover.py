"""Hover on a transcript line: what the row is and where it sits in its session's tree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from server.features.markdowntext import code, text
from server.features.tree import TreeView
from storage.prices import PRICES_DATE
from storage.reader import read_entry
from storage.rows import Row
from storage.usage import response_from_entry


def _tool_names(entry: dict[str, Any]) -> list[str]:
    msg = entry.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    if not isinstance(content, list):
        return []
    return [str(b.get("name")) for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]


def _pair_line(view: TreeView, row: Row) -> list[str]:
    out = []
    links = view.links()
    for tid in row.tool_use_ids:
        answer = links.results.get(tid)
        where = f"result on line {answer.line + 1}" if answer else "no result"
        out.append(f"tool call {code(tid)}: {where}")
    for tid in row.tool_result_ids:
        call = links.calls.get(tid)
        where = f"call on line {call.line + 1}" if call else "its call is not in this file"
        out.append(f"result of {code(tid)}: {where}")
    return out


def _response_usage(path: Path, view: TreeView, row: Row, entry: dict[str, Any]) -> list[str]:
    """Tokens and cost of the API response an assistant row belongs to, counted once for all its rows."""
    r = response_from_entry(entry, path, row.offset)
    if r is None:
        return []
    cache = f"cache write {r.cache_creation_tokens:,}"
    if r.cache_1h_tokens:
        cache += f" (1h {r.cache_1h_tokens:,})"
    cost = f"${r.cost_usd:.6f}" if r.cost_usd is not None else f"cost unknown (no price for {code(r.model)})"
    out = [
        f"response: input {r.input_tokens:,}, output {r.output_tokens:,}, {cache}, "
        f"cache read {r.cache_read_tokens:,} · {cost} (prices of {PRICES_DATE})"
    ]
    if row.message_id:
        shared = view.links().responses.get(row.message_id, 0)
        if shared > 1:
            out.append(f"one API response stored as {shared} rows: counted once")
    return out


def hover_markdown(path: Path, view: TreeView, row: Row) -> str:
    """Markdown describing `row`."""
    t = view.transcript
    entry = read_entry(path, row)
    lines: list[str] = []
    role = None
    msg = entry.get("message")
    if isinstance(msg, dict):
        role = msg.get("role")
    head = f"**{text(view.label(row))}**"
    if role and role != row.type:
        head += f" (role {text(role)})"
    if isinstance(entry.get("attachment"), dict):
        head += f" {code(entry['attachment'].get('type'))}"
    lines.append(f"{head} · line {row.line + 1}")
    if row.uuid:
        lines.append(f"uuid {code(row.uuid)}")
    if row.parent:
        parent = t.nodes.get(row.parent)
        where = f"line {parent.line + 1}" if parent else "not in this file"
        lines.append(f"parent {code(row.parent)} ({where})")
    elif row.is_chain_row:
        lines.append("root (no parent)")
    if row.logical_parent:
        lines.append(f"logical parent {code(row.logical_parent)} (before compaction)")
    if row.is_chain_row:
        lines.append(f"depth {view.depth(row)}")
    if row.timestamp:
        lines.append(f"time {text(row.timestamp)}")
    if isinstance(msg, dict):
        if msg.get("model"):
            lines.append(f"model {code(msg['model'])}")
        usage = msg.get("usage")
        if isinstance(usage, dict):
            parts = [f"{text(k.replace('_tokens', ''))} {v}" for k, v in usage.items() if isinstance(v, int)]
            lines.append("usage: " + ", ".join(parts))
        if row.message_id:
            lines.append(f"message id {code(row.message_id)}")
        lines.extend(_response_usage(path, view, row, entry))
    names = _tool_names(entry)
    if names:
        lines.append("tools: " + ", ".join(code(n) for n in names))
    lines.extend(_pair_line(view, row))
    if row.uuid and row.is_chain_row:
        if row.uuid in view.on_chain:
            lines.append("on the resume chain")
        else:
            start = view.branch_of(row)
            branch = ": unreachable from the leaf"
            if start is not None:
                branch = f": branch from {code(start.uuid)} (line {start.line + 1})"
            lines.append("not on the resume chain" + branch)
        kids = view.children.get(row.uuid, [])
        lines.append("1 child" if len(kids) == 1 else f"{len(kids)} children")
    if row.is_compact_boundary:
        meta = found if isinstance(found := entry.get("compactMetadata"), dict) else {}
        lines.append(
            f"compaction ({text(meta.get('trigger', '?'))}): {text(meta.get('preTokens', '?'))} tokens before, "
            f"{text(meta.get('postTokens', '?'))} after"
        )
    if row.leaf_uuid:
        leaf = t.nodes.get(row.leaf_uuid)
        lines.append(f"leaf {code(row.leaf_uuid)} ({f'line {leaf.line + 1}' if leaf else 'not in this file'})")
    if row.forked_from:
        lines.append(f"forked from session {code(row.forked_from[0])} at {code(row.forked_from[1])}")
    if row.agent_id:
        lines.append(f"agent {code(row.agent_id)}")
    return "  \n".join(lines)
