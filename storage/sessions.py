"""Session summaries for listing: read only the first and last 64 KiB of each file.

Title order: custom title, AI title, last prompt, summary of the leaf, first real user prompt.
The leaf is the last `last-prompt`'s, else the last main-chain message row (files of CLIs before
2.1 have no `last-prompt`; their `summary` rows name the leaf they summarise). A file with no
user or assistant row (a 1.0.x summary-only file, a 2.0.x empty one) is no session: the CLI says
"No conversation found" for it, and listing leaves it out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from storage.boundaries import scan_boundaries
from storage.countcache import CountCache
from storage.fileopen import open_regular, read_sidecar
from storage.jsonline import BOM, loads_line
from storage.paths import (
    SubagentFile,
    iter_project_dirs,
    iter_session_files,
    legacy_agent_files,
    subagent_files,
)
from storage.unlisted import unlisted

WINDOW = 64 * 1024
BRANCH_RE = re.compile(rb'"gitBranch":"((?:[^"\\]|\\.)*)"')
SESSION_ID_RE = re.compile(rb'"sessionId"\s*:\s*"([0-9a-fA-F-]{36})"')
FIRST_TS_RE = re.compile(rb'"timestamp"\s*:\s*"([0-9T:.Z+-]{10,40})"')
METADATA_MARKER = b'{"type"'
"""Metadata rows start with their type (compact or spaced JSON); chain rows with `parentUuid`."""
TITLE_TYPES = frozenset({b"custom-title", b"ai-title", b"last-prompt", b"tag", b"summary"})
TITLE_MAX = 200
TYPE_AT_START = re.compile(rb'\{\s*"type"\s*:\s*"([A-Za-z0-9_-]+)"')
"""Metadata rows start with their type; chain rows start with `parentUuid`."""
HEAD_SCAN_TYPES = frozenset({b"user", b"assistant", b"attachment", b"system", b"progress"})
"""Type markers of rows that carry a session's fields (cwd, uuid, first prompt); the head scan skips any other
row that starts with its type (metadata). Not `storage.rows.CHAIN_TYPES`, the row types a chain is made of."""
SKIP_PROMPT_PREFIXES = ("<command-name>", "<local-command-", "<command-message>", "<system-reminder>")


@dataclass
class SessionInfo:
    session_id: str
    path: Path
    project_dir: Path
    cwd: str | None = None
    title: str = ""
    custom_title: str | None = None
    ai_title: str | None = None
    last_prompt: str | None = None
    first_prompt: str | None = None
    summary: str | None = None
    tag: str | None = None
    created: str | None = None
    modified: str | None = None
    modified_ts: float = 0.0
    size: int = 0
    message_count: int = 0
    leaf_uuid: str | None = None
    git_branch: str | None = None
    forked_from: dict[str, Any] | None = None
    sidechain_start: bool = False
    has_messages: bool = False
    """Whether the file holds a user or assistant row (else the CLI finds no conversation in it)."""
    first_uuid: str | None = None
    """The first chain row's uuid: a `--fork-session` copy starts with its source's rows."""
    started: str = ""
    """The file's first timestamp of any row (a fork's file starts when the forking process did)."""
    starts_at_boundary: bool = False
    """Whether the first chain row is a compact boundary: a `--fork-session` copy made after a compaction."""
    compact_uuids: list[str] | None = None
    """The uuids of the file's compact boundaries in its first `compact_scanned` bytes; None until looked for
    (only when a session of its folder starts at a boundary, see `link_session_forks`)."""
    compact_scanned: int = 0
    subagents: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "path": str(self.path),
            "projectDir": str(self.project_dir),
            "cwd": self.cwd,
            "title": self.title,
            "created": self.created,
            "modified": self.modified,
            "messageCount": self.message_count,
            "leafUuid": self.leaf_uuid,
            "forkedFrom": self.forked_from,
            "subagents": self.subagents,
            "gitBranch": self.git_branch,
            "tag": self.tag,
            "sizeBytes": self.size,
        }


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _loads(line: bytes) -> dict[str, Any] | None:
    """A line as the transcript reader takes it (leniently, as the CLI does), else None."""
    try:
        value = loads_line(line)[0]
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def text_of(content: Any) -> str:
    """The plain text of a message content (string, or the text blocks of a list)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def real_prompt(entry: dict[str, Any]) -> str | None:
    """The text of a user prompt typed by a person, or None for tool results, meta rows,
    compact summaries and command wrappers."""
    if entry.get("type") != "user" or entry.get("isMeta") or entry.get("isCompactSummary"):
        return None
    message = entry.get("message")
    if not isinstance(message, dict):
        return None
    content = message.get("content")
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return None
    text = text_of(content).strip()
    if not text or text.startswith(SKIP_PROMPT_PREFIXES):
        return None
    return text


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= TITLE_MAX else text[: TITLE_MAX - 1] + "…"


def _read_windows(path: Path, size: int) -> tuple[bytes, bytes | None]:
    with open_regular(path) as fh:
        if size <= 2 * WINDOW:
            return fh.read(), None
        head = fh.read(WINDOW)
        fh.seek(size - WINDOW)
        return head, fh.read(WINDOW)


def _lines(buf: bytes, whole: bool) -> Iterator[bytes]:
    """Lines of a window, lazily; a window's cut last line is left out."""
    pos = 0
    while True:
        nl = buf.find(b"\n", pos)
        if nl < 0:
            if whole and pos < len(buf):
                yield buf[pos:]
            return
        yield buf[pos:nl]
        pos = nl + 1


def _metadata_lines(buf: bytes) -> Iterator[bytes]:
    """Whole lines of `buf` that are title-bearing metadata rows, found with byte searches."""
    starts: list[int] = [0] if buf.startswith(METADATA_MARKER) else []
    pos = 0
    while (at := buf.find(b"\n" + METADATA_MARKER, pos)) >= 0:
        starts.append(at + 1)
        pos = at + 1
    for start in starts:  # file order: the last one wins
        m = TYPE_AT_START.match(buf, start)
        if m is None or m.group(1) not in TITLE_TYPES:
            continue
        end = buf.find(b"\n", start)
        yield buf[start:end] if end >= 0 else buf[start:]


def _last_main_message(buf: bytes, whole: bool) -> str | None:
    """The uuid of the window's last user or assistant row that is not a sidechain row."""
    lines = list(_lines(buf, whole))
    if not whole and lines:
        lines = lines[1:]  # the window's first line may be cut
    for line in reversed(lines):
        if b'"uuid"' not in line or (b'"user"' not in line and b'"assistant"' not in line):
            continue
        entry = _loads(line)
        if entry is None or entry.get("type") not in ("user", "assistant") or entry.get("isSidechain") is True:
            continue
        uuid = entry.get("uuid")
        if isinstance(uuid, str):
            return uuid
    return None


def _last_branch(buf: bytes) -> str | None:
    at = buf.rfind(b'"gitBranch":"')
    if at < 0:
        return None
    m = BRANCH_RE.match(buf, at)
    return m.group(1).decode("utf-8", "replace") if m else None


def read_session_info(
    path: Path, *, with_subagents: bool = True, count: bool = True, counts: CountCache | None = None
) -> SessionInfo:
    """Summarise one session file from its head and tail windows."""
    st = path.stat()
    info = SessionInfo(session_id=path.stem, path=path, project_dir=path.parent, size=st.st_size)
    info.modified_ts = st.st_mtime
    info.modified = _iso(st.st_mtime)
    data, tail = _read_windows(path, st.st_size)
    whole = tail is None
    head = data[len(BOM) :] if data.startswith(BOM) else data  # the reader skips a BOM too
    summaries: dict[str, str] = {}
    first_chain_seen = False
    m = FIRST_TS_RE.search(head)
    info.started = m.group(1).decode("ascii", "replace") if m else ""
    for line in _lines(head, whole):
        m = TYPE_AT_START.match(line)
        if m is not None and m.group(1) not in HEAD_SCAN_TYPES:
            continue
        if not line.strip():
            continue
        entry = _loads(line)
        if entry is None:
            continue
        if info.created is None and isinstance(entry.get("timestamp"), str) and "uuid" in entry:
            info.created = entry["timestamp"]
        if info.first_uuid is None and isinstance(entry.get("uuid"), str):
            info.first_uuid = entry["uuid"]
            info.starts_at_boundary = entry.get("type") == "system" and entry.get("subtype") == "compact_boundary"
        if info.cwd is None and isinstance(entry.get("cwd"), str):
            info.cwd = entry["cwd"]
        if info.git_branch is None and isinstance(entry.get("gitBranch"), str):
            info.git_branch = entry["gitBranch"]
        if entry.get("type") in ("user", "assistant") and not first_chain_seen:
            first_chain_seen = True
            info.sidechain_start = entry.get("isSidechain") is True
        if info.forked_from is None and isinstance(entry.get("forkedFrom"), dict):
            info.forked_from = entry["forkedFrom"]
        if info.first_prompt is None:
            info.first_prompt = real_prompt(entry)
        if first_chain_seen and None not in (info.first_prompt, info.created, info.cwd, info.first_uuid):
            break
    for window in (head,) if tail is None else (head, tail):
        for line in _metadata_lines(window):
            entry = _loads(line)
            if entry is not None:
                _take_metadata(info, entry, summaries)
    branch = _last_branch(tail if tail is not None else head)
    if branch is not None:
        info.git_branch = branch
    last_message = _last_main_message(tail if tail is not None else head, whole)
    info.has_messages = first_chain_seen or last_message is not None
    leaf = info.leaf_uuid or last_message
    if info.summary is None and leaf in summaries:
        info.summary = summaries[leaf or ""]
    title = info.custom_title or info.ai_title or info.last_prompt or info.summary or info.first_prompt
    info.title = _cut(title or "")
    if info.created is None:
        info.created = _iso(st.st_mtime)
    if count:
        info.message_count = (counts or CountCache(None)).count(path, st, data if whole else None)
    if with_subagents:
        info.subagents = [subagent_json(s) for s in subagent_files(path)]
    return info


def _take_metadata(info: SessionInfo, entry: dict[str, Any], summaries: dict[str, str]) -> None:
    etype = entry.get("type")
    if etype == "custom-title" and isinstance(entry.get("customTitle"), str):
        info.custom_title = entry["customTitle"] or None
    elif etype == "ai-title" and isinstance(entry.get("aiTitle"), str):
        info.ai_title = entry["aiTitle"] or None
    elif etype == "last-prompt":
        if isinstance(entry.get("lastPrompt"), str):
            info.last_prompt = entry["lastPrompt"] or None
        if isinstance(entry.get("leafUuid"), str):
            info.leaf_uuid = entry["leafUuid"]
    elif etype == "tag" and isinstance(entry.get("tag"), str):
        info.tag = entry["tag"] or None
    elif etype == "summary" and isinstance(entry.get("summary"), str):
        leaf = entry.get("leafUuid")
        if isinstance(leaf, str):
            summaries[leaf] = entry["summary"]


def subagent_json(sub: SubagentFile) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    data = read_sidecar(sub.meta_path) if sub.meta_path is not None else None
    if data is not None:
        try:
            loaded = orjson.loads(data)
            meta = loaded if isinstance(loaded, dict) else {}
        except orjson.JSONDecodeError:
            meta = {}
    return {
        "agentId": sub.agent_id,
        "path": str(sub.path),
        "agentType": meta.get("agentType"),
        "description": meta.get("description"),
        "toolUseId": meta.get("toolUseId"),
    }


def list_sessions(
    projects_dir: Path, project_dirs: Iterable[Path] | None = None, *, count: bool = True
) -> list[SessionInfo]:
    """Every session under `projects_dir` (or only in `project_dirs`), newest first."""
    dirs = list(project_dirs) if project_dirs is not None else list(iter_project_dirs(projects_dir))
    out: list[SessionInfo] = []
    counts = CountCache() if count else None
    for d in dirs:
        in_dir: list[SessionInfo] = []
        for f in iter_session_files(d):
            try:
                info = read_session_info(f, count=count, counts=counts)
            except OSError as exc:
                unlisted(f, exc)
                continue
            if info.has_messages:
                in_dir.append(info)
        attach_legacy_agents(d, in_dir)
        out.extend(in_dir)
    if counts is not None:
        counts.save()
    link_session_forks(out)
    out.sort(key=lambda s: s.modified_ts, reverse=True)
    return out


def attach_legacy_agents(project_dir: Path, sessions: list[SessionInfo]) -> None:
    """Older CLIs wrote subagents as flat `agent-<id>.jsonl` files beside the sessions; each row
    names its session. Attach each such file to the session it names, except the `Warmup` ones
    (2.0.x primed its agents with that prompt at start-up: they belong to no conversation)."""
    by_id = {s.session_id: s for s in sessions}
    for path in legacy_agent_files(project_dir):
        try:
            with open_regular(path) as fh:
                head = fh.read(WINDOW)
        except OSError:
            continue
        if _is_warmup(head):
            continue
        m = SESSION_ID_RE.search(head)
        owner = by_id.get(m.group(1).decode("ascii")) if m else None
        if owner is not None:
            agent_id = path.stem[len("agent-") :]
            owner.subagents.append(
                {"agentId": agent_id, "path": str(path), "agentType": None, "description": None, "toolUseId": None}
            )


def _is_warmup(head: bytes) -> bool:
    """Whether an agent file starts with the start-up `Warmup` prompt of 2.0.x."""
    first = next(_lines(head, True), b"")
    entry = _loads(first) if first.strip() else None
    message = entry.get("message") if entry is not None else None
    if entry is None or not isinstance(message, dict):
        return False
    return entry.get("type") == "user" and message.get("content") == "Warmup"


def link_session_forks(sessions: list[SessionInfo]) -> None:
    """`--fork-session` copies carry no `forkedFrom`: link them by their first row, then (scanning files for
    compact boundaries where needed) the copies of compacted sessions."""
    link_by_first_row(sessions)
    _link_compacted_forks(sessions)


def link_by_first_row(sessions: list[SessionInfo]) -> None:
    """A session that starts with the same row as an older session of its project folder is marked as forked
    from the oldest such session (from the heads alone)."""
    groups: dict[tuple[Path, str], list[SessionInfo]] = {}
    for s in sessions:
        if s.first_uuid:
            groups.setdefault((s.project_dir, s.first_uuid), []).append(s)
    for group in groups.values():
        if len(group) < 2:
            continue
        group.sort(key=lambda s: (s.created or "", s.started, s.modified_ts))
        source = group[0]
        for s in group[1:]:
            if s.forked_from is None:
                s.forked_from = {"sessionId": source.session_id, "messageUuid": None}


def compact_uuids(info: SessionInfo) -> list[str]:
    """The session's compact boundaries, scanning only what it has not scanned yet (the bytes appended
    since); an unreadable file has none."""
    if info.compact_uuids is None or info.compact_scanned > info.size:
        info.compact_uuids, info.compact_scanned = [], 0
    if info.compact_scanned < info.size:
        try:
            more, info.compact_scanned = scan_boundaries(info.path, info.compact_scanned)
        except OSError:
            return info.compact_uuids
        info.compact_uuids = [*info.compact_uuids, *more]
    return info.compact_uuids


def _link_compacted_forks(sessions: list[SessionInfo]) -> None:
    """A `--fork-session` copy made after a compaction starts at its source's last compact boundary, not
    at its first row: it is marked as forked from the oldest older session of its folder holding that
    boundary. Files are scanned for boundaries only in folders holding such a copy, and only once."""
    for s in sessions:
        if s.forked_from is not None or not s.starts_at_boundary or not s.first_uuid:
            continue
        older = [
            o
            for o in sessions
            if o is not s
            and o.project_dir == s.project_dir
            and (o.started, o.created or "") < (s.started, s.created or "")
        ]
        holders = [o for o in older if s.first_uuid in compact_uuids(o)]
        if holders:
            source = min(holders, key=lambda o: (o.started, o.created or ""))
            s.forked_from = {"sessionId": source.session_id, "messageUuid": None}
