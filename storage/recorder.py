"""Recording one session as the Claude Code CLI records it (spec section 3).

A `SessionRecorder` turns prompts, model responses, tool results, interruptions, compactions and
subagent turns into transcript rows: it skips uuids already in the file, keeps the parent cursor
(tool results hang off the row that holds their tool_use), stamps every chain row, creates the
file lazily on the first user/assistant row, queues the lines on a `WriteQueue` and re-appends
the session's metadata at close so it stays in the file's last 64 KiB. No networking here.
"""

from __future__ import annotations

import os
import threading
import uuid as uuidlib
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from storage.access import new_session_path, open_decided_folder, resolve_target, walk_folders
from storage.admission import Admission, admit
from storage.chain import build_chain
from storage.errors import InUse, InvalidArgument
from storage.fileopen import read_small
from storage.jsonline import dump_line
from storage.livesession import config_dir_of
from storage.paths import AGENT_ID_RE, project_folder_name, resolve_cwd
from storage.reader import read_entries
from storage.transcript import Transcript
from storage.writequeue import FLUSH_INTERVAL, TornTail, Vanished, WriteQueue

DEFAULT_VERSION = "2.1.328"
"""The CLI version we stamp by default: the format we write is the one this version reads."""
USER_TYPE = "external"
INTERRUPTED = "[Request interrupted by user]"
INTERRUPTED_FOR_TOOL_USE = "[Request interrupted by user for tool use]"
REJECTED_TOOL_USE = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file "
    "edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to "
    "tell you how to proceed."
)
COMPACT_SUMMARY_PREFIX = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation.\n\n"
)
METADATA_ORDER = ("last-prompt", "custom-title", "ai-title", "tag", "agent-name", "cost-state")


class SessionIdInUse(InUse):
    """A new session was asked for with an id whose file already exists (as the CLI refuses)."""


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_uuid() -> str:
    return str(uuidlib.uuid4())


def git_branch_of(cwd: str) -> str:
    """The branch checked out at `cwd` read from `.git/HEAD`; `HEAD` when detached or no repo
    (what the CLI writes outside a repository). The working directory may be hostile: `.git` and
    HEAD are read only if they are small regular files (a FIFO would block, a device never end)."""
    cur = Path(cwd)
    for d in (cur, *cur.parents):
        git = d / ".git"
        head: Path | None = None
        if git.is_dir():
            head = git / "HEAD"
        elif git.is_file():
            text = _small_text(git)
            if text is None:
                return "HEAD"
            if text.startswith("gitdir:"):
                gd = Path(text[7:].strip())
                head = (gd if gd.is_absolute() else d / gd) / "HEAD"
        if head is not None:
            ref = _small_text(head)
            if ref is None:
                return "HEAD"
            return ref[len("ref: refs/heads/") :] if ref.startswith("ref: refs/heads/") else "HEAD"
    return "HEAD"


def _small_text(path: Path, limit: int = 4096) -> str | None:
    """The stripped text of a regular file of at most `limit` bytes (`read_small`); None for anything else."""
    data = read_small(path, limit, follow_links=True)
    return None if data is None else data.decode("utf-8", "replace").strip()


def _prompt_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return "\n".join(t for t in texts if t) or None
    return None


class _Chain:
    """The parent cursor and tool_use index of one file (the main transcript or an agent's)."""

    def __init__(self) -> None:
        self.known: set[str] = set()
        self.cursor: str | None = None
        self.tool_rows: dict[str, str] = {}
        """tool_use id -> uuid of the assistant row that holds it."""
        self.answered: set[str] = set()
        self.last_message: str | None = None
        self.last_response_id: str | None = None
        self.last_response_tools: list[str] = []

    def load(self, t: Transcript, *, sidechain: bool | None) -> None:
        for row in t.rows:
            if row.uuid:
                self.known.add(row.uuid)
            if row.uuid and row.type == "assistant" and (sidechain is None or row.sidechain == sidechain):
                for tid in row.tool_use_ids:
                    self.tool_rows[tid] = row.uuid
            self.answered.update(row.tool_result_ids)


class _Writer:
    """Shared row building for the main transcript and subagent transcripts."""

    rec: SessionRecorder
    chain: _Chain
    path: Path
    sidechain: bool = False
    agent_id: str | None = None

    def _stamp(self, entry: dict[str, Any], parent: str | None) -> dict[str, Any]:
        rec = self.rec
        row: dict[str, Any] = {"parentUuid": parent, "isSidechain": self.sidechain}
        if self.agent_id is not None:
            row["agentId"] = self.agent_id
        for key, value in entry.items():
            if key not in ("parentUuid", "isSidechain", "agentId"):
                row[key] = value
        row.setdefault("uuid", new_uuid())
        row.setdefault("timestamp", now_iso())
        row["userType"] = row.get("userType", USER_TYPE)
        row["entrypoint"] = rec.entrypoint
        row["cwd"] = rec.cwd
        row["sessionId"] = rec.session_id
        row["version"] = rec.version
        row["gitBranch"] = rec.git_branch
        return row

    def _insert(self, entries: list[dict[str, Any]], start_parent: str | None) -> list[str]:
        """insertMessageChain: stamp and queue `entries` (all new), moving the cursor."""
        chain = self.chain
        parent = start_parent
        out: list[str] = []
        for entry in entries:
            etype = entry.get("type")
            effective = parent
            source = entry.get("sourceToolAssistantUUID")
            if etype == "user" and isinstance(source, str) and source:
                effective = source
            if etype == "system" and entry.get("subtype") == "compact_boundary":
                effective = None
                entry = {**entry, "logicalParentUuid": entry.get("logicalParentUuid", parent)}
            row = self._stamp(entry, effective)
            uid = row["uuid"]
            self.rec._queue_row(self, row, uid, is_message=etype in ("user", "assistant"))
            chain.known.add(uid)
            message = row.get("message")
            if etype == "assistant" and isinstance(message, dict) and isinstance(message.get("content"), list):
                if message.get("id") != chain.last_response_id:
                    chain.last_response_id = message.get("id")
                    chain.last_response_tools = []
                for block in message["content"]:
                    if isinstance(block, dict) and block.get("type") in ("tool_use", "server_tool_use"):
                        if isinstance(block.get("id"), str):
                            chain.tool_rows[block["id"]] = uid
                            chain.last_response_tools.append(block["id"])
            if etype == "user" and isinstance(message, dict) and isinstance(message.get("content"), list):
                for block in message["content"]:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        chain.answered.add(str(block.get("tool_use_id")))
            if etype in ("user", "assistant"):
                chain.last_message = uid
            parent = uid
            chain.cursor = uid
            out.append(uid)
        return out

    def record_entries(self, entries: Iterable[dict[str, Any]], parent_hint: str | None = None) -> list[str]:
        """recordTranscript: CLI-style message entries (`type`, `uuid`, `message`, ...). Entries
        whose uuid is already in the file are skipped; a run of them at the start moves the cursor,
        later ones do not. Subagent files are never de-duplicated."""
        chain = self.chain
        start = parent_hint if parent_hint is not None else chain.cursor
        fresh: list[dict[str, Any]] = []
        for entry in entries:
            uid = entry.get("uuid")
            if not self.sidechain and isinstance(uid, str) and uid in chain.known:
                if not fresh and entry.get("type") in ("user", "assistant", "attachment", "system"):
                    start = uid
                continue
            fresh.append(entry)
        with self.rec._lock:
            if not fresh:
                chain.cursor = start
                return []
            return self._insert(fresh, start)

    def record_prompt(
        self,
        content: str | list[dict[str, Any]],
        *,
        is_meta: bool = False,
        uuid: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> str:
        """A user prompt (text or content blocks); `is_meta` for context the user did not type."""
        entry: dict[str, Any] = {"type": "user", "message": {"role": "user", "content": content}}
        if is_meta:
            entry["isMeta"] = True
        if uuid:
            entry["uuid"] = uuid
        entry.update(extra or {})
        if not is_meta and not self.sidechain:
            text = _prompt_text(content)
            if text:
                self.rec.last_prompt = text
        written = self.record_entries([entry])
        return written[0] if written else str(uuid)

    def record_assistant(
        self, message: dict[str, Any], *, uuids: list[str] | None = None, request_id: str | None = None
    ) -> list[str]:
        """One Messages API response: one row per content block, all with the response's
        `message.id`, model, stop reason and usage."""
        base = {k: v for k, v in message.items() if k != "content"}
        base.setdefault("id", f"msg_{uuidlib.uuid4().hex[:24]}")
        base.setdefault("type", "message")
        base.setdefault("role", "assistant")
        blocks = message.get("content") or []
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        entries = []
        for i, block in enumerate(blocks or [None]):
            msg = {**base, "content": [block] if block is not None else []}
            entry: dict[str, Any] = {"type": "assistant", "message": msg}
            if request_id:
                entry["requestId"] = request_id
            if uuids and i < len(uuids):
                entry["uuid"] = uuids[i]
            entries.append(entry)
        return self.record_entries(entries)

    def record_tool_results(
        self, blocks: list[dict[str, Any]], *, tool_use_results: list[Any] | None = None, uuids: list[str] | None = None
    ) -> list[str]:
        """One user row per tool_result block, parented to the row that holds its tool_use (with
        `sourceToolAssistantUUID`) when that row is known, else to the cursor."""
        entries = []
        for i, block in enumerate(blocks):
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                raise ValueError(f"not a tool_result block: {block!r}")
            entry: dict[str, Any] = {"type": "user", "message": {"role": "user", "content": [block]}}
            source = self.chain.tool_rows.get(str(block.get("tool_use_id")))
            if source is not None:
                entry["sourceToolAssistantUUID"] = source
            if tool_use_results is not None and i < len(tool_use_results):
                entry["toolUseResult"] = tool_use_results[i]
            else:
                entry["toolUseResult"] = _result_summary(block)
            if uuids and i < len(uuids):
                entry["uuid"] = uuids[i]
            entries.append(entry)
        return self.record_entries(entries)

    def pending_tool_uses(self) -> list[str]:
        """tool_use ids recorded in this file that have no result yet."""
        return [tid for tid in self.chain.tool_rows if tid not in self.chain.answered]

    def record_interruption(self, *, for_tool_use: bool = False) -> str:
        """The user pressed Esc: as the CLI, a user row `[Request interrupted by user]`; during
        tool use, first a rejected result for every unanswered tool call of the last response,
        then `[Request interrupted by user for tool use]`."""
        if for_tool_use:
            pending = [tid for tid in self.chain.last_response_tools if tid not in self.chain.answered]
            if pending:
                self.record_tool_results(
                    [
                        {"type": "tool_result", "tool_use_id": tid, "content": REJECTED_TOOL_USE, "is_error": True}
                        for tid in pending
                    ],
                    tool_use_results=["User rejected tool use"] * len(pending),
                )
        text = INTERRUPTED_FOR_TOOL_USE if for_tool_use else INTERRUPTED
        return self.record_entries(
            [{"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": text}]}}]
        )[0]


def _result_summary(block: dict[str, Any]) -> Any:
    content = block.get("content")
    if isinstance(content, list):
        texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return "\n".join(texts)
    return content if content is not None else ""


class SubagentRecorder(_Writer):
    """Rows of one subagent: `isSidechain`, `agentId`, to `<sessionId>/subagents/agent-<id>.jsonl`
    with its `.meta.json`; never de-duplicated against the main file."""

    def __init__(self, rec: SessionRecorder, agent_id: str, meta: dict[str, Any]) -> None:
        self.rec = rec
        self.agent_id = agent_id
        self.sidechain = True
        self.chain = _Chain()
        self.meta = meta
        # decided like every path we write: a planted `<sessionId>/` link is no way out
        projects = rec.path.parent.parent
        self.path = resolve_target(
            projects, path=rec.path.with_suffix("") / "subagents" / f"agent-{agent_id}.jsonl", access="create"
        )
        self.meta_path = self.path.with_name(f"agent-{agent_id}.meta.json")
        self.meta_written = False


class SessionRecorder(_Writer):
    """One session being recorded. Build with `create()` (new) or `adopt()` (resume a file)."""

    def __init__(
        self,
        path: Path,
        session_id: str,
        cwd: str,
        *,
        version: str,
        entrypoint: str,
        git_branch: str,
        fsync: bool,
        interval: float | None,
        mark_live: bool,
        config_dir: Path | None,
        read_size: int | None = None,
    ) -> None:
        """`read_size`: a resumed file's size before it was read (see `WriteQueue.expect`)."""
        self.rec = self
        self.path = path
        self.session_id = session_id
        self.cwd = cwd
        self.version = version
        self.entrypoint = entrypoint
        self.git_branch = git_branch
        self.chain = _Chain()
        self.last_prompt: str | None = None
        self.metadata: dict[str, dict[str, Any]] = {}
        """Metadata rows re-appended at close, by type (last one wins)."""
        self.torn_tails: list[TornTail] = []
        self.subagents: dict[str, SubagentRecorder] = {}
        self.materialized = path.exists()
        self.closed = False
        self._held: list[tuple[bytes, str | None]] = []
        self._lock = threading.RLock()
        self._message_keys: set[str] = set()
        config = config_dir if config_dir is not None else config_dir_of(path.parent.parent)
        self._config_dir = config
        self._admission: Admission | None = None
        if mark_live:  # admitted before anything else is set up: a refused writer leaves nothing behind
            # a resumed file is locked itself too, whatever name of its folder another writer comes by
            self._admission = admit(
                session_id,
                config_dir=config,
                cwd=cwd,
                version=version,
                entrypoint=entrypoint,
                transcript=path if self.materialized else None,
            )
        self._queue = WriteQueue(
            fsync=fsync,
            interval=interval,
            on_torn=self.torn_tails.append,
            trailer=self._trailer,
            sole_writer=mark_live,  # admitted: any byte not ours is another writer's
            on_made=self._made,
        )
        if self.materialized:  # resumed: its file is never made again if it goes
            self._queue.expect(path, read_size)

    # ---- construction -------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        projects_dir: Path,
        cwd: str,
        *,
        session_id: str | None = None,
        version: str = DEFAULT_VERSION,
        entrypoint: str = "session-lsp",
        git_branch: str | None = None,
        fsync: bool = False,
        interval: float | None = FLUSH_INTERVAL,
        mark_live: bool = True,
        config_dir: Path | None = None,
    ) -> SessionRecorder:
        """A new session of `cwd` under `projects_dir`; its file is made on the first message."""
        real = resolve_cwd(cwd)
        sid = session_id or new_uuid()
        if (Path(projects_dir) / project_folder_name(real) / f"{sid}.jsonl").exists():
            raise SessionIdInUse(f"Session ID {sid} is already in use.")
        path = new_session_path(projects_dir, real, sid)
        return cls(
            path,
            sid,
            real,
            version=version,
            entrypoint=entrypoint,
            git_branch=git_branch or git_branch_of(real),
            fsync=fsync,
            interval=interval,
            mark_live=mark_live,
            config_dir=config_dir if config_dir is not None else Path(projects_dir).parent,
        )

    @classmethod
    def adopt(
        cls,
        path: Path,
        *,
        fsync: bool = False,
        version: str = DEFAULT_VERSION,
        entrypoint: str = "session-lsp",
        interval: float | None = FLUSH_INTERVAL,
        mark_live: bool = True,
        config_dir: Path | None = None,
        leaf_uuid: str | None = None,
    ) -> SessionRecorder:
        """Resume an existing transcript: later rows go to the same file, continuing the chain
        the CLI would rebuild (from `leaf_uuid` if given)."""
        path = Path(path)
        size = os.stat(path).st_size  # before the read: whatever is appended from now on is not in the chain read
        t = Transcript.load(path)
        chain = build_chain(t, leaf_uuid)
        session_id = path.stem
        meta_rows = [r for r in t.rows if r.type in METADATA_ORDER and r.type != "cost-state"]
        stamp_rows = [r for r in reversed(t.rows) if r.is_chain_row][:1]
        bodies = read_entries(path, meta_rows + stamp_rows)
        stamp = bodies[-1] if stamp_rows else {}
        cwd = found if isinstance(found := stamp.get("cwd"), str) else resolve_cwd(os.getcwd())
        branch = found if isinstance(found := stamp.get("gitBranch"), str) else git_branch_of(cwd)
        rec = cls(
            path,
            session_id,
            cwd,
            version=version,
            entrypoint=entrypoint,
            git_branch=branch,
            fsync=fsync,
            interval=interval,
            mark_live=mark_live,
            config_dir=config_dir,
            read_size=size,
        )
        rec.chain.load(t, sidechain=False)
        rec.chain.cursor = (chain.rows[-1].uuid or None) if chain.rows else None  # uuid-less rows share ""
        messages = [r for r in chain.rows if r.is_message]
        rec.chain.last_message = (messages[-1].uuid or None) if messages else rec.chain.cursor
        for row, body in zip(meta_rows, bodies):
            if row.type == "last-prompt":
                if isinstance(body.get("lastPrompt"), str):
                    rec.last_prompt = body["lastPrompt"]
            else:
                rec.metadata[row.type or ""] = {**body, "sessionId": session_id}
        return rec

    # ---- queueing ---------------------------------------------------------------------------

    def _queue_row(self, writer: _Writer, row: dict[str, Any], key: str | None, *, is_message: bool) -> None:
        if self.closed:
            raise RuntimeError("recorder is closed")
        line = dump_line(row)
        if isinstance(writer, SubagentRecorder):
            if not writer.meta_written:
                _write_meta(writer)
                writer.meta_written = True
            self._queue.put(writer.path, line, key)
            return
        if is_message and not row.get("isSidechain"):
            if key:
                self._message_keys.add(key)
        if not self.materialized:
            if row.get("type") not in ("user", "assistant"):
                self._held.append((line, key))
                return
            self.materialized = True
            for held, held_key in self._held:
                self._queue.put(self.path, held, held_key)
            self._held.clear()
        self._queue.put(self.path, line, key)

    def _queue_metadata(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self._queue_row(self, entry, None, is_message=False)

    def _made(self, path: Path) -> None:
        """The session's new file was made by our first append: from now on it is locked itself too
        (`Admission.hold_file`), as a resumed one is from the start."""
        if path == self.path and self._admission is not None:
            self._admission.hold_file(path)

    def _trailer(self, path: Path, keys: list[str | None]) -> bytes | None:
        """After a batch of main-file rows: a `last-prompt` whose `leafUuid` is the newest message,
        so that resume never starts from an older leaf (the CLI prefers `last-prompt.leafUuid`)."""
        if path != self.path or self.closed:
            return None
        leaf = next((k for k in reversed(keys) if k and k in self._message_keys), None)
        if leaf is None:
            return None
        # no memory of a leaf already written: a batch whose append was refused is retried with its keys, and
        # its `last-prompt` must come with it (before, it was counted as written and the retry came without)
        return dump_line(self._last_prompt_entry(leaf))

    def _last_prompt_entry(self, leaf: str | None) -> dict[str, Any]:
        entry: dict[str, Any] = {"type": "last-prompt"}
        if self.last_prompt:
            entry["lastPrompt"] = self.last_prompt[:5000]
        if leaf:
            entry["leafUuid"] = leaf
        entry["sessionId"] = self.session_id
        return entry

    # ---- more kinds of rows -------------------------------------------------------------------

    def record_compact_boundary(
        self,
        summary: str,
        *,
        trigger: str = "manual",
        pre_tokens: int = 0,
        post_tokens: int | None = None,
        preserved: list[str] | None = None,
    ) -> tuple[str, str]:
        """A compaction: a boundary (null parent, `logicalParentUuid` = the cursor) and the summary
        user row after it. `preserved` uuids (already in the file, in order) are kept after the
        summary on resume."""
        meta: dict[str, Any] = {"trigger": trigger, "preTokens": pre_tokens}
        if post_tokens is not None:
            meta["postTokens"] = post_tokens
        boundary_uuid = new_uuid()
        summary_uuid = new_uuid()
        if preserved:
            meta["preservedSegment"] = {"headUuid": preserved[0], "anchorUuid": summary_uuid, "tailUuid": preserved[-1]}
            meta["preservedMessages"] = {"anchorUuid": summary_uuid, "uuids": list(preserved)}
        boundary = {
            "type": "system",
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
            "isMeta": False,
            "uuid": boundary_uuid,
            "level": "info",
            "compactMetadata": meta,
        }
        text = summary if summary.startswith(COMPACT_SUMMARY_PREFIX) else COMPACT_SUMMARY_PREFIX + summary
        summary_row = {
            "type": "user",
            "message": {"role": "user", "content": text},
            "isVisibleInTranscriptOnly": True,
            "isCompactSummary": True,
            "uuid": summary_uuid,
        }
        with self._lock:
            b, s = self._insert([boundary, summary_row], self.chain.cursor)
        return b, s

    def record_subagent(
        self,
        agent_id: str | None = None,
        *,
        agent_type: str = "general-purpose",
        description: str = "",
        tool_use_id: str | None = None,
        **meta: Any,
    ) -> SubagentRecorder:
        """A subagent's transcript (`record_prompt`/`record_assistant`/`record_tool_results` on the
        returned object). `agent_id` defaults to `a` + 16 hex, as the CLI names them."""
        aid = agent_id or "a" + uuidlib.uuid4().hex[:16]
        if not AGENT_ID_RE.fullmatch(aid):
            raise InvalidArgument(f"not an agent id: {aid!r} (letters, digits, _ and - only)")
        with self._lock:
            if aid in self.subagents:
                return self.subagents[aid]
            info: dict[str, Any] = {"agentType": agent_type, "description": description}
            if tool_use_id:
                info["toolUseId"] = tool_use_id
            info.update(meta)
            sub = SubagentRecorder(self, aid, info)
            self.subagents[aid] = sub
            return sub

    def set_title(self, title: str) -> None:
        self._set_meta({"type": "custom-title", "customTitle": title, "sessionId": self.session_id})

    def set_ai_title(self, title: str) -> None:
        self._set_meta({"type": "ai-title", "aiTitle": title, "sessionId": self.session_id})

    def set_tag(self, tag: str) -> None:
        self._set_meta({"type": "tag", "tag": tag, "sessionId": self.session_id})

    def set_cost_state(self, state: dict[str, Any] | None = None, **fields: Any) -> None:
        """`cost-state` (totalCostUSD, totalAPIDuration, modelUsage, ...), as the CLI keeps it."""
        self._set_meta({"type": "cost-state", "sessionId": self.session_id, **(state or {}), **fields})

    def _set_meta(self, entry: dict[str, Any]) -> None:
        self.metadata[entry["type"]] = entry
        self._queue_metadata(entry)

    # ---- flushing -----------------------------------------------------------------------------

    @property
    def cursor(self) -> str | None:
        return self.chain.cursor

    def flush(self) -> list[str]:
        """Write what is queued; the uuids made durable since the previous `flush()`."""
        return self._queue.flush().durable

    def close(self) -> list[str]:
        """Flush, re-append the metadata (last-prompt with its leaf, title, tag, cost-state) so it
        stays in the last 64 KiB, flush again and release the live-session mark."""
        if self.closed:
            return []
        try:
            durable = self._queue.flush().durable
            self.closed = True  # no more rows; the trailer stays quiet, the block below has it all
            if self.materialized:
                with self._lock:
                    tail = (
                        [self._last_prompt_entry(self.chain.last_message)]
                        if (self.last_prompt or self.chain.last_message)
                        else []
                    )
                    tail += [self.metadata[t] for t in METADATA_ORDER if t in self.metadata]
                    for entry in tail:
                        self._queue.put(self.path, dump_line(entry), None)
            durable += self._queue.close().durable
            return durable
        finally:
            self.closed = True
            # a refused write left lines queued: they are dropped with the admission, never written later (the
            # timer, the flush at exit) by a writer no longer admitted
            self._queue.discard()
            if self._admission is not None:
                self._admission.release()

    def abandon(self) -> None:
        """Give the session up before anything was recorded: nothing is written, not even the
        metadata `close()` re-appends, and the admission is released."""
        if self.closed:
            return
        self.closed = True
        try:
            if self._queue.pending:
                raise RuntimeError("abandon() after rows were queued; use close()")
            self._queue.close()
        finally:
            if self._admission is not None:
                self._admission.release()

    def __enter__(self) -> SessionRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _write_meta(sub: SubagentRecorder) -> None:
    """The subagent's `.meta.json` sidecar (0600, folders 0700), written once before its rows. Once the session's
    file was written (or resumed), its `<sessionId>/subagents` folders are made only inside its project folder and
    beside its file: if either is gone, `Vanished` and nothing is made. The subagent's file is then made only in
    the folder this made (`WriteQueue.expect_folder`)."""
    from storage.metadata import write_private_json, write_private_json_in

    rec = sub.rec
    if rec.materialized:
        rec._queue.flush()  # the session's rows go first: its file exists from here on
    if not rec._queue.known(rec.path):  # nothing of the session written yet: its folders are made as for its file
        write_private_json(sub.meta_path, sub.meta)
        rec._queue.expect_folder(sub.path)
        return
    project = rec.path.parent
    try:
        folder = open_decided_folder(project)
        try:
            os.stat(rec.path.name, dir_fd=folder, follow_symlinks=False)
        except BaseException:
            os.close(folder)
            raise
    except FileNotFoundError:
        raise Vanished(
            f"{rec.path}: this session's file or its folder was moved or deleted; its subagent "
            f"{sub.agent_id} is not written (no folder is made for it)"
        ) from None
    inner = [str(n) for n in sub.path.parent.relative_to(project).parts]
    write_private_json_in(
        walk_folders(folder, inner, sub.path.parent, made=[], at=str(project)), sub.meta_path, sub.meta
    )
    rec._queue.expect_folder(sub.path)
