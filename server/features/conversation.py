"""A session as a conversation people read: display items for `sessions/conversation`.

The items follow the chain `claude --resume` rebuilds (`storage.resume`), extended back through each
compaction (a boundary's `logicalParentUuid`) so the whole history reads as one: user prompts,
assistant text (Markdown), thinking, tool calls with their results (edits with their patch from the
result row's `toolUseResult`), images, compactions with their summary, subagent calls with the
subagent's file. Rows the model sees but a person did not write (system reminders, attachments,
meta rows, the request's effort carrier) are items marked `hidden`. A branch point (a row with
several continuing children: a rewind or a fork inside the file) is followed by a `branch` item
naming each branch's leaf, to pass back as `leafUuid`.

Paging: items come oldest first; `limit` items ending just before the item `before` (default: the
last ones). Only the rows needed for the page are read, so a large session opens at its end.

Opening at a message (a search hit): `at` names a row (by uuid or line); the page then reaches back
to that row's item, with a few items before it, and `atId` names the item to show. A row that is
not on the default chain opens the branch that holds it (`atBranch`: pass that `leafUuid` on).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from server.features.tree import is_continuation
from storage.apiform import api_messages
from storage.attachments import REMINDER_OPEN, reminder_body
from storage.chain import Chain, build_chain, recover_parallel, relink_preserved, walk
from storage.errors import InvalidArgument, NotATranscript
from storage.models import continued_model, supports_system_messages
from storage.paths import subagent_files
from storage.reader import read_entries
from storage.rows import Row
from storage.transcript import Transcript

DEFAULT_LIMIT = 200
MAX_LIMIT = 5000
TEXT_CAP = 20_000
"""Longest tool result or attachment text sent; the item says `truncated` and its full length."""
BATCH_ROWS = 64
AT_CONTEXT = 6
"""Items shown before the one a conversation is opened at."""
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
AGENT_TOOLS = frozenset({"Agent", "Task"})


class ConversationError(InvalidArgument):
    """A `leafUuid` or `before` that names nothing in the session."""


@dataclass
class Source:
    """What items are made from: the transcript, the rows in display order, and lookups."""

    transcript: Transcript
    chain: Chain
    rows: list[Row]
    segment_of: dict[int, int]
    """row position in `rows` -> segment index (0 = oldest)."""
    resumed_start: int
    """Position in `rows` where the resumed chain (the last segment) starts."""
    result_rows: dict[str, Row] = field(default_factory=dict)
    """tool_use id -> the row holding its result (first on the chain)."""
    called: set[str] = field(default_factory=set)
    subagents: dict[str, str] = field(default_factory=dict)
    """agent id -> subagent transcript path."""
    children: dict[str, list[Row]] = field(default_factory=dict)
    first_user: int | None = None
    """Position of the resumed chain's first user row: the effort carrier follows it."""


def earlier_rows(t: Transcript, chain: Chain) -> list[Row]:
    """The rows before the resumed chain: for each compaction, back from the boundary's
    `logicalParentUuid`, the chain that compaction continued (oldest first), until a walk comes
    back to a boundary already met. Each stretch is walked
    as resume walks it (preserved segment relinked); the orphaned parallel rows of all of them are
    put back in one pass, which finds the same rows as one pass per stretch."""
    stretches: list[list[Row]] = []
    met: set[str] = set()
    cur = chain
    while cur.boundary is not None and cur.boundary.logical_parent in t.nodes:
        met.add(cur.boundary.uuid or "")
        prev = walk(t, t.nodes[cur.boundary.logical_parent])
        if prev.boundary is not None and prev.boundary.uuid in met:
            break  # a fork copy made after a compaction: the walk comes back to a boundary met
        relink_preserved(t, prev)
        stretches.append(prev.rows)
        cur = prev
    combined = Chain(leaf=None, rows=[r for rows in reversed(stretches) for r in rows])
    recover_parallel(t, combined)
    return combined.rows


def carries_effort(t: Transcript, chain: Chain) -> bool:
    """Whether the API form resume sends has the empty system message that carries the effort:
    only for models that take system messages in the conversation (the model the resume continues
    with, as `storage.models` decides), and only when no system message follows the first user
    message already (system-role attachments before the first reply make one, which carries it)."""
    replies = [r for r in chain.rows if r.type == "assistant"]
    if not supports_system_messages(continued_model(read_entries(t.path, replies[-8:]))):
        return False
    first_reply = next((i for i, r in enumerate(chain.rows) if r.type == "assistant"), len(chain.rows))
    attachments = [r for r in chain.rows[:first_reply] if r.type == "attachment"]
    for entry in read_entries(t.path, attachments):
        if entry.get("renderedRole") != "system":
            continue
        for part in entry.get("rendered") or []:
            content = part.get("content") if isinstance(part, dict) else part
            if any(b.get("type") == "text" and reminder_body(str(b.get("text", ""))).strip() for b in _blocks(content)):
                return False
    return True


def load_source(path: Path, leaf_uuid: str | None, transcript: Transcript | None = None) -> Source:
    # the index's transcript grows on the watcher's thread: work on a snapshot of its rows
    t = Transcript.from_rows(path, list(transcript.rows)) if transcript is not None else Transcript.load(path)
    if not any(r.is_chain_row for r in t.rows):
        raise NotATranscript(f"{path}: no conversation rows (not a Claude Code transcript?)")
    if leaf_uuid is not None and leaf_uuid not in t.nodes:
        raise ConversationError(f"leafUuid {leaf_uuid} is not a row of {path.name}")
    chain = build_chain(t, leaf_uuid)
    rows: list[Row] = []
    segment_of: dict[int, int] = {}
    placed: set[str] = set()
    segment = 0
    for row in earlier_rows(t, chain):
        if row.is_compact_boundary and rows:
            segment += 1
        if row.uuid not in placed:
            placed.add(row.uuid or "")
            segment_of[len(rows)] = segment
            rows.append(row)
    if rows:
        segment += 1
    resumed_start = len(rows)
    for row in chain.rows:
        if row.uuid not in placed:
            placed.add(row.uuid or "")
            segment_of[len(rows)] = segment
            rows.append(row)
    src = Source(t, chain, rows, segment_of, resumed_start, children=t.children())
    if carries_effort(t, chain):
        src.first_user = next((i for i in range(resumed_start, len(rows)) if rows[i].type == "user"), None)
    for row in rows:
        src.called.update(row.tool_use_ids)
        for tid in row.tool_result_ids:
            src.result_rows.setdefault(tid, row)
    src.subagents = {s.agent_id: str(s.path) for s in subagent_files(path)}
    return src


# -- small helpers --------------------------------------------------------------------------------


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _capped(text: str) -> dict[str, Any]:
    if len(text) <= TEXT_CAP:
        return {"text": text}
    return {"text": text[:TEXT_CAP], "truncated": True, "length": len(text)}


def _result_text(content: Any) -> tuple[str, list[dict[str, Any]]]:
    """A tool result's text and its images."""
    if isinstance(content, str):
        return content, []
    texts: list[str] = []
    images: list[dict[str, Any]] = []
    for block in _blocks(content):
        if block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif block.get("type") == "image":
            image = _image(block)
            if image:
                images.append(image)
    return "\n".join(texts), images


def _image(block: dict[str, Any]) -> dict[str, Any] | None:
    source = block.get("source")
    if not isinstance(source, dict):
        return None
    if source.get("type") == "base64" and isinstance(source.get("data"), str):
        return {"mediaType": str(source.get("media_type") or "image/png"), "data": source["data"]}
    return {"mediaType": str(source.get("media_type") or ""), "url": str(source.get("url") or "")}


def _usage(message: dict[str, Any]) -> dict[str, int] | None:
    usage = message.get("usage")
    if not isinstance(usage, dict):
        return None
    names = {
        "input_tokens": "input",
        "output_tokens": "output",
        "cache_read_input_tokens": "cacheRead",
        "cache_creation_input_tokens": "cacheCreation",
    }
    out = {short: usage[key] for key, short in names.items() if isinstance(usage.get(key), int)}
    return out or None


def is_reminder(text: str) -> bool:
    return text.lstrip().startswith(REMINDER_OPEN)


COMMAND_RE = re.compile(r"<command-name>(.*?)</command-name>", re.S)
COMMAND_ARGS_RE = re.compile(r"<command-args>(.*?)</command-args>", re.S)
STDOUT_RE = re.compile(r"^\s*<local-command-(stdout|stderr)>(.*?)</local-command-\1>\s*$", re.S)


def command_of(text: str) -> dict[str, Any]:
    """A slash command the person typed (`command`) or its output (`commandOutput`), as the CLI
    records them inside tags; {} for plain text."""
    m = COMMAND_RE.search(text)
    if m and text.lstrip().startswith("<command-"):
        args = COMMAND_ARGS_RE.search(text)
        name = m.group(1).strip()
        return {"command": f"{name} {args.group(1).strip()}".strip() if args else name}
    m = STDOUT_RE.match(text)
    if m:
        return {"commandOutput": m.group(2)}
    return {}


def _count(value: Any) -> int:
    """A line number or count the editors draw as one: what the transcript holds if it is one, else 0 (the file is
    anyone's JSON: a string there went into the VS Code panel's HTML as it was, and broke Neovim's `%d`)."""
    return value if type(value) is int and value >= 0 else 0


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def diff_of(name: str, tool_input: dict[str, Any], result: Any) -> dict[str, Any] | None:
    """The patch an edit made, from the result row's `toolUseResult` (as the CLI records it):
    `structuredPatch` hunks; a Write that created a file has none, so its content is all added."""
    if name not in EDIT_TOOLS or not isinstance(result, dict):
        return None
    file_path = result.get("filePath") or tool_input.get("file_path") or tool_input.get("notebook_path")
    patch = _list(result.get("structuredPatch"))
    hunks = [
        {
            "oldStart": _count(h.get("oldStart")),
            "oldLines": _count(h.get("oldLines")),
            "newStart": _count(h.get("newStart")),
            "newLines": _count(h.get("newLines")),
            "lines": [x for x in _list(h.get("lines")) if isinstance(x, str)],
        }
        for h in patch
        if isinstance(h, dict)
    ]
    created = result.get("type") == "create"
    if not hunks and created and isinstance(result.get("content"), str):
        lines = result["content"].splitlines()
        added = ["+" + x for x in lines]
        hunks = [{"oldStart": 0, "oldLines": 0, "newStart": 1, "newLines": len(lines), "lines": added}]
    if not hunks:
        return None
    return {"filePath": str(file_path or ""), "created": created, "hunks": hunks}


# -- rows to items --------------------------------------------------------------------------------


class ItemMaker:
    """Turns rows (with their bodies) into display items."""

    def __init__(self, src: Source, bodies: dict[int, dict[str, Any]]) -> None:
        self.src = src
        self.bodies = bodies

    def base(self, row: Row, kind: str, n: int, pos: int) -> dict[str, Any]:
        return {
            "id": row.uuid if n == 0 else f"{row.uuid}:{n}",
            "kind": kind,
            "uuid": row.uuid,
            "line": row.line,
            "time": row.timestamp,
            "segment": self.src.segment_of.get(pos, 0),
            "hidden": False,
        }

    def items(self, row: Row, pos: int) -> list[dict[str, Any]]:
        entry = self.bodies[id(row)]
        if row.type == "assistant":
            out = self.assistant(row, entry, pos)
        elif row.type == "user":
            out = self.user(row, entry, pos)
        elif row.type == "attachment":
            out = [self.attachment(row, entry, pos)]
        elif row.is_compact_boundary:
            out = [self.compaction(row, entry, pos)]
        else:
            out = [self.system(row, entry, pos)]
        if pos == self.src.first_user:
            out.append(self.effort(row, pos, len(out)))
        branch = self.branch(row, pos, len(out))
        if branch is not None:
            out.append(branch)
        return out

    def effort(self, row: Row, pos: int, n: int) -> dict[str, Any]:
        item = self.base(row, "effort", n, pos)
        item.update(
            hidden=True,
            id=f"{row.uuid}:effort",
            text="An empty system message after the first user message: it carries the request's effort "
            "(output_config). The model sees it on every request.",
        )
        return item

    def assistant(self, row: Row, entry: dict[str, Any], pos: int) -> list[dict[str, Any]]:
        message = found if isinstance(found := entry.get("message"), dict) else {}
        model = message.get("model") if isinstance(message.get("model"), str) else None
        usage = _usage(message)
        out: list[dict[str, Any]] = []
        for block in _blocks(message.get("content")):
            btype = block.get("type")
            item = self.base(row, "assistant", len(out), pos)
            item.update(model=model, usage=usage, messageId=message.get("id"))
            if btype == "text":
                item["text"] = str(block.get("text", ""))
            elif btype in ("thinking", "redacted_thinking"):
                item.update(kind="thinking", text=str(block.get("thinking", "")), redacted=btype != "thinking")
            elif btype in ("tool_use", "server_tool_use"):
                item.update(self.tool(block))
            else:
                item.update(kind="other", text=str(btype))
            out.append(item)
        if entry.get("isApiErrorMessage") is True:
            for item in out:
                item["error"] = True
        return out

    def tool(self, block: dict[str, Any]) -> dict[str, Any]:
        tid = str(block.get("id", ""))
        name = str(block.get("name", ""))
        tool_input = found if isinstance(found := block.get("input"), dict) else {}
        out: dict[str, Any] = {"kind": "tool", "name": name, "toolUseId": tid, "input": tool_input, "result": None}
        res_row = self.src.result_rows.get(tid)
        if res_row is None or id(res_row) not in self.bodies:
            return out
        entry = self.bodies[id(res_row)]
        message = found if isinstance(found := entry.get("message"), dict) else {}
        results = [b for b in _blocks(message.get("content")) if b.get("type") == "tool_result"]
        block_res = next((b for b in results if b.get("tool_use_id") == tid), {})
        text, images = _result_text(block_res.get("content"))
        out["result"] = {
            "uuid": res_row.uuid,
            "line": res_row.line,
            "time": res_row.timestamp,
            "isError": block_res.get("is_error") is True,
            "images": images,
            **_capped(text),
        }
        use_result = entry.get("toolUseResult")
        diff = diff_of(name, tool_input, use_result)
        if diff is not None:
            out["diff"] = diff
        agent = res_row.spawned_agent
        if name in AGENT_TOOLS and agent:
            out["subagent"] = {"agentId": agent, "path": self.src.subagents.get(agent)}
        return out

    def user(self, row: Row, entry: dict[str, Any], pos: int) -> list[dict[str, Any]]:
        message = found if isinstance(found := entry.get("message"), dict) else {}
        blocks = _blocks(message.get("content"))
        hidden = row.is_meta or entry.get("isVisibleInTranscriptOnly") is True
        origin = found if isinstance(found := entry.get("origin"), dict) else {}
        out: list[dict[str, Any]] = []
        text_parts: list[str] = []
        images: list[dict[str, Any]] = []
        for block in blocks:
            btype = block.get("type")
            if btype == "tool_result":
                if block.get("tool_use_id") not in self.src.called:
                    item = self.base(row, "tool", len(out), pos)
                    text, imgs = _result_text(block.get("content"))
                    item.update(name="(call not on the chain)", toolUseId=block.get("tool_use_id"), input={})
                    item["result"] = {
                        "uuid": row.uuid,
                        "line": row.line,
                        "isError": block.get("is_error") is True,
                        "images": imgs,
                        **_capped(text),
                    }
                    out.append(item)
                continue
            if btype == "text":
                text = str(block.get("text", ""))
                if is_reminder(text) and not row.is_compact_summary:
                    item = self.base(row, "reminder", len(out), pos)
                    item.update(hidden=True, **_capped(text))
                    out.append(item)
                else:
                    text_parts.append(text)
            elif btype == "image":
                image = _image(block)
                if image:
                    images.append(image)
        if text_parts or images:
            item = self.base(row, "user", len(out), pos)
            text = "\n\n".join(text_parts)
            item.update(text=text, images=images, hidden=hidden)
            if row.is_compact_summary:
                item.update(kind="summary", hidden=False)
            else:
                item.update(command_of(text))
            if origin.get("kind"):
                item["origin"] = origin.get("kind")
            out.append(item)
        return out

    def attachment(self, row: Row, entry: dict[str, Any], pos: int) -> dict[str, Any]:
        attachment = found if isinstance(found := entry.get("attachment"), dict) else {}
        parts: list[str] = []
        for part in entry.get("rendered") or []:
            content = part.get("content") if isinstance(part, dict) else part
            parts.extend(str(b.get("text", "")) for b in _blocks(content) if b.get("type") == "text")
        item = self.base(row, "attachment", 0, pos)
        item.update(
            hidden=True,
            attachmentType=str(attachment.get("type") or ""),
            role=entry.get("renderedRole"),
            **_capped("\n\n".join(parts)),
        )
        return item

    def compaction(self, row: Row, entry: dict[str, Any], pos: int) -> dict[str, Any]:
        meta = found if isinstance(found := entry.get("compactMetadata"), dict) else {}
        item = self.base(row, "compaction", 0, pos)
        item.update(
            text=str(entry.get("content") or "Conversation compacted"),
            trigger=found if isinstance(found := meta.get("trigger"), str) else None,
            preTokens=found if type(found := meta.get("preTokens")) is int else None,
        )
        return item

    def system(self, row: Row, entry: dict[str, Any], pos: int) -> dict[str, Any]:
        item = self.base(row, "system", 0, pos)
        subtype = str(entry.get("subtype") or "")
        content = entry.get("content")
        text = content if isinstance(content, str) else ""
        if subtype == "api_error" and not text:
            error = entry.get("error")
            text = str(error.get("message") if isinstance(error, dict) else error or "API error")
        item.update(subtype=subtype, hidden=subtype not in ("local_command", "api_error"), **_capped(text))
        return item

    def branch(self, row: Row, pos: int, n: int) -> dict[str, Any] | None:
        kids = [k for k in self.src.children.get(row.uuid or "", []) if is_continuation(k)]
        if len(kids) < 2:
            return None
        next_uuid = self.src.rows[pos + 1].uuid if pos + 1 < len(self.src.rows) else None
        branches = []
        for kid, entry in zip(kids, read_entries(self.src.transcript.path, kids)):
            leaf = branch_leaf(self.src, kid)
            branches.append(
                {
                    "firstUuid": kid.uuid,
                    "line": kid.line,
                    "leafUuid": leaf.uuid,
                    "leafLine": leaf.line,
                    "time": kid.timestamp,
                    "preview": preview(entry),
                    "current": kid.uuid == next_uuid,
                }
            )
        item = self.base(row, "branch", n, pos)
        item.update(id=f"{row.uuid}:branch", branches=branches)
        return item


def preview(entry: dict[str, Any], size: int = 80) -> str:
    """The first words a row shows: its first text that is not a reminder."""
    message = found if isinstance(found := entry.get("message"), dict) else {}
    for block in _blocks(message.get("content")):
        text = str(block.get("text", "")) if block.get("type") == "text" else ""
        if text.strip() and not is_reminder(text):
            line = " ".join(text.split())
            return line if len(line) <= size else line[: size - 1] + "\u2026"
    return ""


def branch_leaf(src: Source, start: Row) -> Row:
    """The newest conversation row below `start` that has no continuation: that branch's leaf."""
    best = start
    stack = [start]
    seen: set[str] = set()
    while stack:
        row = stack.pop()
        if row.uuid in seen:
            continue
        seen.add(row.uuid or "")
        kids = [k for k in src.children.get(row.uuid or "", []) if k.is_chain_row]
        if not kids and row.is_message and row.order > best.order:
            best = row
        stack.extend(kids)
    return best


# -- paging ---------------------------------------------------------------------------------------


def _batches(end: int, size: int) -> Iterator[range]:
    while end > 0:
        start = max(0, end - size)
        yield range(start, end)
        end = start


def _read_bodies(src: Source, positions: range) -> dict[int, dict[str, Any]]:
    rows = [src.rows[i] for i in positions]
    extra = [src.result_rows[t] for r in rows for t in r.tool_use_ids if t in src.result_rows]
    wanted = {id(r): r for r in rows + extra}
    ordered = sorted(wanted.values(), key=lambda r: r.offset)
    return {id(r): e for r, e in zip(ordered, read_entries(src.transcript.path, ordered))}


def _position_of(src: Source, item_id: str) -> int:
    uuid = item_id.split(":", 1)[0]
    for i, row in enumerate(src.rows):
        if row.uuid == uuid:
            return i
    raise ConversationError(f"before: no item {item_id} in this conversation")


def page(src: Source, limit: int, before: str | None, at_pos: int | None = None) -> tuple[list[dict[str, Any]], bool]:
    """`limit` items ending just before item `before` (or at the end), and whether more precede.
    With `at_pos`, the page reaches back to the items of that row and `AT_CONTEXT` more."""
    end = len(src.rows)
    if before is not None:
        end = _position_of(src, before) + 1
    collected: list[list[dict[str, Any]]] = []
    count = 0
    from_at = 0
    first_pos = end
    need = limit
    for positions in _batches(end, max(BATCH_ROWS, limit)):
        maker = ItemMaker(src, _read_bodies(src, positions))
        batch: list[dict[str, Any]] = []
        for pos in positions:
            made = maker.items(src.rows[pos], pos)
            batch.extend(made)
            if at_pos is not None and pos >= at_pos:
                from_at += len(made)
        if before is not None and positions.stop == end:
            cut = next((i for i, item in enumerate(batch) if item["id"] == before), None)
            if cut is None:
                raise ConversationError(f"before: no item {before} in this conversation")
            batch = batch[:cut]
        collected.append(batch)
        count += len(batch)
        first_pos = positions.start
        if at_pos is not None:
            if first_pos > at_pos:
                continue
            need = max(limit, from_at + AT_CONTEXT)
        if count > need:
            break
    items = [item for batch in reversed(collected) for item in batch]
    more = len(items) > need or first_pos > 0
    return items[-need:] if need else [], more


@dataclass(frozen=True)
class At:
    """A row to open the conversation at: by its uuid, or by its 0-based line in the file."""

    uuid: str | None = None
    line: int | None = None

    def describe(self) -> str:
        return self.uuid if self.uuid is not None else f"line {(self.line or 0) + 1}"


def find_row(t: Transcript, at: At) -> Row:
    """The conversation row `at` names; `ConversationError` when it names none."""
    if at.uuid is not None:
        row = t.nodes.get(at.uuid)
    else:
        row = next((r for r in t.rows if r.line == at.line), None)
    if row is None or not row.is_chain_row:
        raise ConversationError(f"at: {at.describe()} is not a conversation row of {t.path.name}")
    return row


def row_position(src: Source, row: Row) -> int | None:
    """Where in `src.rows` the items showing `row` are made: its own place or, when it holds tool
    results, the place of the row holding the first of those calls (a result shows inside its call).
    None when the conversation shown does not hold the row."""
    own = next((i for i, r in enumerate(src.rows) if r.uuid == row.uuid), None)
    if own is None:
        return None
    results = set(row.tool_result_ids)
    callers = [i for i, r in enumerate(src.rows[:own]) if results.intersection(r.tool_use_ids)] if results else []
    return min([own, *callers])


def item_of(items: list[dict[str, Any]], uuid: str | None) -> str | None:
    """The id of the first item showing the row `uuid`: its own item, or the call holding its result."""
    for item in items:
        result = item.get("result")
        if item["uuid"] == uuid or (isinstance(result, dict) and result.get("uuid") == uuid):
            return str(item["id"])
    return None


def conversation(
    path: Path,
    *,
    leaf_uuid: str | None = None,
    limit: int = DEFAULT_LIMIT,
    before: str | None = None,
    api_form: bool = False,
    transcript: Transcript | None = None,
    at: At | None = None,
) -> dict[str, Any]:
    """The display items of the session at `path` (see the module docstring); `transcript`, when
    given, is that file already loaded (the server's live index), so it is not read again."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ConversationError(f"limit must be a whole number from 1 to {MAX_LIMIT}")
    if at is not None and before is not None:
        raise ConversationError("give either at or before, not both")
    src = load_source(path, leaf_uuid, transcript)
    at_row = find_row(src.transcript, at) if at is not None else None
    at_pos = row_position(src, at_row) if at_row is not None else None
    at_branch = False
    if at_row is not None and at_pos is None and leaf_uuid is None:
        src = load_source(path, branch_leaf(src, at_row).uuid, src.transcript)
        at_pos = row_position(src, at_row)
        at_branch = True
    if at is not None and at_pos is None:
        raise ConversationError(f"at: {at.describe()} is not on the conversation shown")
    items, more = page(src, limit, before, at_pos)
    out: dict[str, Any] = {
        "sessionId": src.transcript.session_id or path.stem,
        "path": str(path),
        "leafUuid": src.chain.leaf.uuid if src.chain.leaf else None,
        "items": items,
        "hasMore": more,
        "subagents": [{"agentId": a, "path": p} for a, p in src.subagents.items()],
    }
    if at_row is not None:
        out["atId"] = item_of(items, at_row.uuid)
        out["atBranch"] = at_branch
    if api_form:
        out["messages"] = api_messages(path, src.chain, effort_statement=True)
    return out
