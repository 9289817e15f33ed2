"""Token usage and cost of transcripts: per API response, per session, per project, per model, per day.

One API response is stored as several assistant rows (one per content block) sharing one
`message.id`: it is counted once, with the figures of its row with the most output tokens (the
CLI 2.1.328 writes the same usage on every row; older CLIs wrote growing output counts). A session
is its own file plus its subagent files (the CLI bills a subagent's calls too). Rows of the model
`<synthetic>` are the CLI's own stand-ins (no API call) and are not counted. Groups larger than a
session (project, model, day, a whole folder) count a response once even when a `--fork-session`
copy holds it again.

Reading is selective: only lines holding the byte marker `"assistant"` are parsed, and only their
link fields and `message.usage` are kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson

from storage.fileopen import open_regular
from storage.linechunks import LongLine, WholeLines
from storage.paths import iter_project_dirs, iter_session_files, legacy_agent_files, subagent_files
from storage.prices import one_hour_writes, response_cost

ASSISTANT_MARKER = b'"assistant"'
SYNTHETIC_MODEL = "<synthetic>"
CHUNK = 8 * 1024 * 1024
FIRST_TS_RE = re.compile(rb'"timestamp"\s*:\s*"([0-9T:.Z+-]{10,40})"')
SESSION_ID_RE = re.compile(rb'"sessionId"\s*:\s*"([0-9a-fA-F-]{36})"')
GROUPINGS = ("session", "project", "model", "day")


def _int(value: Any) -> int:
    return value if value.__class__ is int and value > 0 else 0


@dataclass(slots=True)
class Response:
    """One API response: its usage as stored, where its first row is, and its cost (None: unpriced)."""

    message_id: str | None
    model: str
    timestamp: str
    session_id: str
    project_dir: Path
    path: Path
    offset: int
    """Byte offset of its first row in `path`."""
    input_tokens: int
    output_tokens: int
    cache_creation_tokens: int
    cache_read_tokens: int
    cache_1h_tokens: int
    cost_usd: float | None
    agent_id: str | None = None

    @property
    def key(self) -> tuple[str, ...]:
        """Identity for de-duplication: the message id, else the row's own place."""
        if self.message_id is not None:
            return (self.message_id,)
        return (str(self.path), str(self.offset))


@dataclass(slots=True)
class Usage:
    """Summed usage of some responses; `cost_usd` is None when any of them has no known price."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_tokens: int = 0
    cache_read_tokens: int = 0
    cache_1h_tokens: int = 0
    responses: int = 0
    priced_cost_usd: float = 0.0
    unpriced_models: set[str] = field(default_factory=set)

    @property
    def cost_usd(self) -> float | None:
        return None if self.unpriced_models else self.priced_cost_usd

    def add(self, r: Response) -> None:
        self.input_tokens += r.input_tokens
        self.output_tokens += r.output_tokens
        self.cache_creation_tokens += r.cache_creation_tokens
        self.cache_read_tokens += r.cache_read_tokens
        self.cache_1h_tokens += r.cache_1h_tokens
        self.responses += 1
        if r.cost_usd is None:
            self.unpriced_models.add(r.model)
        else:
            self.priced_cost_usd += r.cost_usd

    def to_json(self) -> dict[str, Any]:
        """The fields `list --json` and `sessions/list` carry."""
        cost = self.cost_usd
        return {
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "cacheCreationTokens": self.cache_creation_tokens,
            "cacheReadTokens": self.cache_read_tokens,
            "costUSD": None if cost is None else round(cost, 6),
        }

    def to_report_json(self) -> dict[str, Any]:
        out = self.to_json()
        out["cacheCreation1hTokens"] = self.cache_1h_tokens
        out["responses"] = self.responses
        out["pricedCostUSD"] = round(self.priced_cost_usd, 6)
        out["unpricedModels"] = sorted(self.unpriced_models)
        return out


def response_from_entry(
    entry: dict[str, Any], path: Path, offset: int, session_id: str | None = None, agent_id: str | None = None
) -> Response | None:
    """The response an assistant row belongs to, or None for other rows and `<synthetic>` ones."""
    if entry.get("type") != "assistant":
        return None
    message = entry.get("message")
    if not isinstance(message, dict):
        return None
    usage = message.get("usage")
    model = message.get("model")
    if not isinstance(usage, dict) or not isinstance(model, str) or model == SYNTHETIC_MODEL:
        return None
    mid = message.get("id")
    ts = entry.get("timestamp")
    sid = session_id or entry.get("sessionId")
    return Response(
        message_id=mid if isinstance(mid, str) else None,
        model=model,
        timestamp=ts if isinstance(ts, str) else "",
        session_id=sid if isinstance(sid, str) else path.stem,
        project_dir=path.parent,
        path=path,
        offset=offset,
        input_tokens=_int(usage.get("input_tokens")),
        output_tokens=_int(usage.get("output_tokens")),
        cache_creation_tokens=_int(usage.get("cache_creation_input_tokens")),
        cache_read_tokens=_int(usage.get("cache_read_input_tokens")),
        cache_1h_tokens=one_hour_writes(usage),
        cost_usd=response_cost(model, usage),
        agent_id=agent_id,
    )


def assistant_lines(path: Path, start: int = 0) -> tuple[list[tuple[int, bytes]], int, bytes]:
    """From byte `start`: the (byte offset, bytes) of the whole lines holding the assistant marker, the
    offset after the last whole line, and the unterminated tail (if any). Other lines are not parsed, nor one over
    `linechunks.MAX_LINE_BYTES` (not read at all; an unfinished one is left out of the tail, b"")."""
    found: list[tuple[int, bytes]] = []
    base = start  # file offset of buf[0]
    with open_regular(path) as fh:
        fh.seek(start)
        lines = WholeLines(fh, CHUNK)
        for buf in lines:  # whole lines only
            if isinstance(buf, LongLine):
                base += buf.length + 1
                continue
            pos = 0
            while (at := buf.find(ASSISTANT_MARKER, pos)) >= 0:
                begin = buf.rfind(b"\n", 0, at) + 1
                end = buf.find(b"\n", at)
                found.append((base + begin, buf[begin:end]))
                pos = end + 1
            base += len(buf)
    return found, base, lines.rest


def responses_of_lines(
    lines: Iterable[tuple[int, bytes]], path: Path, session_id: str | None = None, agent_id: str | None = None
) -> list[Response]:
    """The responses of some assistant lines, each once, in the order of their first row."""
    found: dict[tuple[str, ...], Response] = {}
    for offset, raw in lines:
        try:
            entry = orjson.loads(raw[3:] if offset == 0 and raw.startswith(b"\xef\xbb\xbf") else raw)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(entry, dict):
            continue
        mid = _message_id(entry)
        known = found.get((mid,)) if mid is not None else None
        if known is not None and _output_tokens(entry) <= known.output_tokens:
            continue  # another row of a response already counted
        r = response_from_entry(entry, path, offset, session_id, agent_id)
        if r is not None:
            merge_response(found, r)
    return list(found.values())


def _message_id(entry: dict[str, Any]) -> str | None:
    message = entry.get("message")
    mid = message.get("id") if message.__class__ is dict else None
    return mid if mid.__class__ is str else None


def _output_tokens(entry: dict[str, Any]) -> int:
    usage = entry["message"].get("usage")
    return _int(usage.get("output_tokens")) if usage.__class__ is dict else 0


def merge_response(found: dict[tuple[str, ...], Response], r: Response) -> None:
    """Add `r` unless its response is there; a later row with more output tokens gives the figures."""
    known = found.get(r.key)
    if known is None:
        found[r.key] = r
    elif r.output_tokens > known.output_tokens:
        r.offset, r.timestamp = known.offset, known.timestamp
        found[r.key] = r


def file_responses(path: Path, session_id: str | None = None, agent_id: str | None = None) -> list[Response]:
    """The responses of one file, each once, in the order of their first row."""
    lines, end, tail = assistant_lines(path)
    if ASSISTANT_MARKER in tail:
        lines.append((end, tail))
    return responses_of_lines(lines, path, session_id, agent_id)


def session_files(path: Path, extra: Iterable[Path] = ()) -> list[tuple[Path, str | None]]:
    """A session file with its subagent files (and `extra` ones, e.g. legacy agent files): (path, agent id).
    Only regular files: a FIFO or device named like a transcript is never opened."""
    files: list[tuple[Path, str | None]] = [(path, None)]
    files += [(s.path, s.agent_id) for s in subagent_files(path) if s.path.is_file()]
    seen = {p for p, _ in files}
    for p in extra:
        if p not in seen and p.is_file():
            files.append((p, p.stem.removeprefix("agent-")))
            seen.add(p)
    return files


class FileReader(Protocol):
    def file_responses(self, path: Path, session_id: str | None = None, agent_id: str | None = None) -> list[Response]:
        """The responses of one file (e.g. `storage.usagecache.UsageCache` keeps them between runs)."""
        ...


def session_responses(path: Path, extra: Iterable[Path] = (), cache: FileReader | None = None) -> list[Response]:
    """Every response of a session (its file and its subagents' files), each once."""
    found: dict[tuple[str, ...], Response] = {}
    read = cache.file_responses if cache is not None else file_responses
    for file, agent in session_files(path, extra):
        try:
            responses = read(file, path.stem, agent)
        except OSError:
            continue
        project_dir = path.parent
        for r in responses:
            r.project_dir = project_dir
            found.setdefault(r.key, r)
    return list(found.values())


def total(responses: Iterable[Response]) -> Usage:
    out = Usage()
    for r in responses:
        out.add(r)
    return out


def session_usage(path: Path, extra: Iterable[Path] = (), cache: FileReader | None = None) -> Usage:
    """Usage of one session: its own file and its subagents, each response once."""
    return total(session_responses(path, extra, cache))


def session_usage_json(info: Any, cache: FileReader | None = None) -> dict[str, Any]:
    """`usage` of a listed session (a `storage.sessions.SessionInfo`), subagents included."""
    extra = [Path(s["path"]) for s in getattr(info, "subagents", []) if isinstance(s, dict) and s.get("path")]
    try:
        return session_usage(info.path, extra, cache).to_json()
    except OSError:
        return Usage().to_json()


def sessions_usage_json(infos: Iterable[Any]) -> list[dict[str, Any]]:
    """`usage` of each listed session, reading through the cache of earlier runs (saved once)."""
    from storage.usagecache import UsageCache

    cache = UsageCache()
    out = [session_usage_json(info, cache) for info in infos]
    cache.save()
    return out


def folder_responses(
    projects_dir: Path, project_dirs: Iterable[Path] | None = None, cache: FileReader | None = None
) -> list[Response]:
    """Every response under a projects folder, each once (fork copies and all), oldest first."""
    dirs = list(project_dirs) if project_dirs is not None else list(iter_project_dirs(projects_dir))
    found: dict[tuple[str, ...], Response] = {}
    per_session: list[tuple[str, str, list[Response]]] = []
    for d in dirs:
        owners = _legacy_owners(legacy_agent_files(d))
        for f in iter_session_files(d):
            responses = session_responses(f, owners.get(f.stem, ()), cache)
            first = min((r.timestamp for r in responses), default="")
            per_session.append((first, _first_timestamp(f), responses))
    # The session that made a response is the one holding it earliest; a fork copy starts later.
    for _, _, responses in sorted(per_session, key=lambda s: (s[0], s[1])):
        for r in responses:
            found.setdefault(r.key, r)
    return sorted(found.values(), key=lambda r: (r.timestamp, str(r.path), r.offset))


def _first_timestamp(path: Path) -> str:
    """The first `timestamp` of a file's head (a fork copy's file starts when the fork was made)."""
    try:
        with open_regular(path) as fh:
            m = FIRST_TS_RE.search(fh.read(64 * 1024))
    except OSError:
        return ""
    return m.group(1).decode("ascii", "replace") if m else ""


def _legacy_owners(files: list[Path]) -> dict[str, list[Path]]:
    """Legacy flat agent files by the session id their rows name."""
    owners: dict[str, list[Path]] = {}
    for path in files:
        try:
            with open_regular(path) as fh:
                head = fh.read(64 * 1024)
        except OSError:
            continue
        m = SESSION_ID_RE.search(head)
        if m is not None:
            owners.setdefault(m.group(1).decode("ascii"), []).append(path)
    return owners


def group_key(r: Response, by: str) -> str:
    if by == "session":
        return r.session_id
    if by == "project":
        return r.project_dir.name
    if by == "model":
        return r.model
    if by == "day":
        return r.timestamp[:10] or "unknown"
    raise ValueError(f"unknown grouping {by!r}; choose one of {', '.join(GROUPINGS)}")


def grouped(responses: Iterable[Response], by: str) -> dict[str, Usage]:
    """Usage per session, project (folder name), model or UTC day, keys sorted."""
    groups: dict[str, Usage] = {}
    for r in responses:
        groups.setdefault(group_key(r, by), Usage()).add(r)
    return dict(sorted(groups.items()))
