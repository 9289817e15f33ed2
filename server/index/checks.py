"""The checks of one session (its main file and its subagent files), without other sessions.

References that the session cannot resolve itself come back as `Pending` and are settled by
`links.resolve` against the whole index, so the same checks run in a worker process.
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from server.index.diagnostics import Diagnostic, Related, bounded, folded_diagnostic
from server.index.filestate import FileState
from storage.chain import build_chain, choose_leaf
from storage.reader import NO_UUID
from storage.rows import CHAIN_TYPES, Row

KNOWN_TYPES = CHAIN_TYPES | {
    "summary", "custom-title", "ai-title", "last-prompt", "tag", "mode", "permission-mode",
    "agent-name", "agent-color", "agent-setting", "pr-link", "worktree-state",
    "file-history-snapshot", "queue-operation", "cost-state", "tools-used", "atis-latch",
    "content-replacement", "progress",
}  # fmt: skip
KNOWN_PREFIXES = ("api-request",)
MAX_RELATED = 20
REACH_TYPES = CHAIN_TYPES - {"progress"}


@dataclass(slots=True)
class Pending:
    """A link the session could not resolve: `kind` is parent, logical-parent, leaf or fork."""

    path: Path
    line: int
    kind: str
    target: str
    extra: str | None = None


@dataclass
class SessionReport:
    diagnostics: list[Diagnostic] = field(default_factory=list)
    pending: list[Pending] = field(default_factory=list)


def is_known_type(etype: str | None) -> bool:
    return etype in KNOWN_TYPES or (etype is not None and etype.startswith(KNOWN_PREFIXES))


def check_session(
    main: FileState | None, subagents: Iterable[FileState], agent_ids: Container[str] | None = None
) -> SessionReport:
    """All per-session checks. `agent_ids`: agents with a transcript file (default: `subagents`)."""
    subs = list(subagents)
    report = SessionReport()
    present = agent_ids if agent_ids is not None else {s.agent_id for s in subs if s.agent_id}
    if main is not None:
        _check_file(main, None, report)
        _check_agents(main, present, report)
    for sub in subs:
        _check_file(sub, main, report)
    report.diagnostics = bounded(report.diagnostics)
    return report


def _check_file(f: FileState, main: FileState | None, report: SessionReport) -> None:
    t = f.transcript
    out = report.diagnostics
    path = f.path
    for p in t.problems:
        code = "line-too-long" if p.too_long else "invalid-json"
        if p.more:  # the bad lines of its kind past those the reader kept, already folded as `bounded` folds them
            out.append(folded_diagnostic(path, p.line, code, p.more, p.last))
        else:
            out.append(Diagnostic(path, p.line, code, p.message))
    if f.torn is not None and f.torn.too_long:
        out.append(Diagnostic(path, f.torn.line, "line-too-long", f.torn.message))
    elif f.torn is not None:
        out.append(Diagnostic(path, f.torn.line, "torn-tail", "the last line is unfinished and does not parse"))
    for note in f.notes:
        out.append(Diagnostic(path, note.line, "lenient-json", f"the CLI reads this line: {note.message}"))
    no_uuid = [later for _, later in t.duplicates if later.uuid == NO_UUID]
    if no_uuid or NO_UUID in t.nodes:
        _report_no_uuid(f, out)
    for first, later in t.duplicates:
        if later.uuid == NO_UUID:
            continue
        out.append(
            Diagnostic(
                path, later.line, "duplicate-uuid", f"uuid {later.uuid} is also on line {first.line + 1}",
                [Related(path, first.line, "first row with this uuid")], key="uuid",
            )
        )  # fmt: skip
    _check_types_and_ids(f, out)
    main_nodes = main.transcript.nodes if main is not None else {}
    _check_links(f, main_nodes, report)
    _check_cycles(f, out)
    _check_tools(f, main, out)
    _check_reach(f, out)


def _report_no_uuid(f: FileState, out: list[Diagnostic]) -> None:
    rows = [r for r in f.transcript.rows if r.uuid == NO_UUID]
    kept = f.transcript.nodes[NO_UUID]
    out.append(
        Diagnostic(
            f.path, rows[0].line, "missing-uuid",
            f"{len(rows)} conversation row(s) have no uuid: the CLI keeps only the last (line {kept.line + 1})",
            [Related(f.path, r.line, "a row without uuid") for r in rows[1:MAX_RELATED]],
        )
    )  # fmt: skip


def _check_types_and_ids(f: FileState, out: list[Diagnostic]) -> None:
    """Unknown entry types, and rows of another session. The CLI itself writes conversation rows of another
    session into a file: before 1.0 a resume copies the history into the new session's file with the old
    ids, and 2.1.0's `--fork-session` records the fork's prompts under the original id
    (tests/corpus/versions). So a chain row of another session is reported only when no row carries the
    file's own id (the file was copied or renamed by hand); any other row of another session always is."""
    seen_types: set[str | None] = set()
    foreign: dict[str, list[Row]] = {}
    expected = f.session_id
    own = False
    for row in f.transcript.rows:
        etype = row.type
        if etype not in seen_types:
            seen_types.add(etype)
            if not is_known_type(etype):
                name = etype if etype is not None else "(no type)"
                out.append(Diagnostic(f.path, row.line, "unknown-type", f"unknown entry type {name!r}", key="type"))
        sid = row.session_id
        if expected is None or sid is None:
            continue
        if sid == expected:
            own = True
        else:
            foreign.setdefault(sid, []).append(row)
    bad_ids = foreign if not own else {}
    if own:
        for sid, rows in foreign.items():
            odd = [r for r in rows if not r.is_chain_row]
            if odd:
                bad_ids[sid] = odd
    for sid, rows in bad_ids.items():
        out.append(
            Diagnostic(
                f.path, rows[0].line, "session-id-mismatch",
                f"{len(rows)} row(s) carry sessionId {sid}, not this file's {expected}", key="sessionId",
            )
        )  # fmt: skip


def _check_links(f: FileState, main_nodes: dict[str, Row], report: SessionReport) -> None:
    t = f.transcript
    nodes = t.nodes
    pending = report.pending
    path = f.path
    last_prompt_line = max((r.line for r in t.rows if r.type == "last-prompt"), default=-1)
    forks_seen: set[str] = set()
    for row in t.rows:
        parent = row.parent
        if parent is not None and parent not in nodes and parent not in main_nodes:
            if row.uuid is None or nodes.get(row.uuid) is row:
                pending.append(Pending(path, row.line, "parent", parent))
        logical = row.logical_parent
        if logical is not None and logical not in nodes and logical not in main_nodes:
            pending.append(Pending(path, row.line, "logical-parent", logical))
        leaf = row.leaf_uuid
        if leaf is not None and leaf not in nodes and (row.type == "summary" or row.type == "last-prompt"):
            if row.type == "summary" or row.line < last_prompt_line:
                pending.append(Pending(path, row.line, "leaf", leaf, row.type))
        fork = row.forked_from
        if fork is not None and fork[0] not in forks_seen and fork[0] != f.session_id:
            forks_seen.add(fork[0])
            pending.append(Pending(path, row.line, "fork", fork[1], fork[0]))


def _check_cycles(f: FileState, out: list[Diagnostic]) -> None:
    nodes = f.transcript.nodes
    done: set[str] = set()
    for uid, row in nodes.items():
        parent = row.parent
        if parent is None or parent in done or parent not in nodes:
            done.add(uid)  # appends put parents first: almost every row ends here
            continue
        if uid in done:
            continue
        path_rows: list[Row] = []
        on_path: dict[str, int] = {}
        cur: Row | None = row
        while cur is not None and cur.uuid not in done:
            cid = cur.uuid or ""
            if cid in on_path:
                _report_cycle(f, path_rows[on_path[cid] :], out)
                break
            on_path[cid] = len(path_rows)
            path_rows.append(cur)
            cur = nodes.get(cur.parent) if cur.parent is not None else None
        done.update(on_path)


def _report_cycle(f: FileState, cycle: list[Row], out: list[Diagnostic]) -> None:
    """Report on the row whose parent link points forward in the file (appends never do)."""
    nodes = f.transcript.nodes
    forward = [r for r in cycle if r.parent is not None and nodes[r.parent].line >= r.line]
    culprit = min(forward or cycle, key=lambda r: r.line)
    related = [Related(f.path, r.line, "in the cycle") for r in sorted(cycle, key=lambda r: r.line) if r is not culprit]
    out.append(
        Diagnostic(
            f.path, culprit.line, "parent-cycle",
            f"parentUuid {culprit.parent} leads back to this row ({len(cycle)} row(s) in the cycle)",
            related[:MAX_RELATED], key="parentUuid",
        )
    )  # fmt: skip


def _check_tools(f: FileState, main: FileState | None, out: list[Diagnostic]) -> None:
    uses: dict[str, Row] = {}
    answered: set[str] = set()
    for row in f.transcript.rows:
        for tid in row.tool_use_ids:
            uses.setdefault(tid, row)
        answered.update(row.tool_result_ids)
    if not uses and not answered:
        return
    main_uses: set[str] = set()
    if main is not None and any(tid not in uses for tid in answered):
        main_uses = {tid for r in main.transcript.rows for tid in r.tool_use_ids}
    for row in f.transcript.rows:
        for tid in row.tool_result_ids:
            if tid not in uses and tid not in main_uses:
                out.append(
                    Diagnostic(
                        f.path, row.line, "orphan-tool-result",
                        f"tool_result for {tid}, but no tool_use with that id in the session", key="tool_use_id",
                    )
                )  # fmt: skip
    for tid, row in uses.items():
        if tid not in answered and not tid.startswith("srvtoolu_"):
            out.append(
                Diagnostic(f.path, row.line, "unanswered-tool-use", f"tool_use {tid} has no tool_result", key="id")
            )


def _check_agents(main: FileState, present: Container[str], out_report: SessionReport) -> None:
    rows = main.transcript.rows
    spawned = [r for r in rows if r.spawned_agent]
    if not spawned:
        return
    inline = {r.agent_id for r in rows if r.sidechain and r.agent_id}
    call_of: dict[str, Row] = {}
    for row in rows:
        for tid in row.tool_use_ids:
            call_of.setdefault(tid, row)
    for res in spawned:
        aid = res.spawned_agent or ""
        if aid in present or aid in inline:
            continue
        call = next((call_of[t] for t in res.tool_result_ids if t in call_of), None)
        at = call if call is not None else res
        out_report.diagnostics.append(
            Diagnostic(
                main.path, at.line, "missing-subagent",
                f"the Agent call started subagent {aid}, but agent-{aid}.jsonl is missing",
                [Related(main.path, res.line, "the tool result naming the subagent")], key="id" if call else None,
            )
        )  # fmt: skip


def _check_reach(f: FileState, out: list[Diagnostic]) -> None:
    """Rows that the resume leaf, and the newest row, do not reach (rewound or abandoned branches).
    In a main file, `isSidechain` rows are a subagent's conversation kept inline (CLIs before 2.0):
    one `subagent-sidechain` note per such conversation instead."""
    t = f.transcript
    nodes = t.nodes
    chain = [r for r in nodes.values() if r.type in REACH_TYPES]
    if not f.is_subagent and any(r.sidechain for r in chain):
        _note_inline_subagents([r for r in chain if r.sidechain], f, out)
        chain = [r for r in chain if not r.sidechain]
    if len(chain) < 2:
        return
    starts = []
    leaf = choose_leaf(t)
    if leaf is not None:
        starts.append(leaf)
    newest = max(chain, key=lambda r: r.line)
    starts.append(newest)
    reached: set[str] = set()
    for start in starts:
        cur: Row | None = start
        while cur is not None and cur.uuid not in reached:
            reached.add(cur.uuid or "")
            link = cur.parent if cur.parent is not None else cur.logical_parent
            cur = nodes.get(link) if link is not None else None
    lost = _unreached(chain, reached)
    if lost and leaf is not None:  # and every row resume puts on its chain (a preserved segment, ...)
        # built only when the walks left rows out: what it adds can only shrink `lost`, never grow it
        reached.update(r.uuid for r in build_chain(t, leaf.uuid).rows if r.uuid is not None)
        lost = _unreached(chain, reached)
    if not lost:
        return
    for head_row, n in _branches(lost):
        out.append(
            Diagnostic(
                f.path, head_row.line, "unreachable-branch",
                f"{n} row(s) from here are on a branch that resume does not reach (a rewind or abandoned branch)",
            )
        )  # fmt: skip


def _unreached(chain: list[Row], reached: set[str]) -> list[Row]:
    """The rows of `chain` resume leaves out once `reached` (grown here) takes in the rows of one response with a
    reached one, and the tool results hanging off a reached row: those come back with resume."""
    left = [r for r in chain if r.uuid not in reached]
    if not left:  # the walks reached every row: most files
        return left
    reached_msgs = {r.message_id for r in chain if r.message_id and r.uuid in reached}
    for r in left:
        if r.message_id in reached_msgs and r.type == "assistant":
            reached.add(r.uuid or "")
    for r in left:
        if r.uuid not in reached and r.tool_result_ids and (r.parent in reached or r.source_tool_assistant in reached):
            reached.add(r.uuid or "")
    return [r for r in left if r.uuid not in reached]


def _branches(rows: list[Row]) -> list[tuple[Row, int]]:
    """The rows grouped into the branches they form among themselves: each branch's first row (one
    whose parent is not among `rows`) with the number of rows hanging off it, in file order."""
    ids = {r.uuid for r in rows}
    root_of: dict[str, str] = {}
    size: dict[str, int] = {}
    roots: list[Row] = []
    for r in sorted(rows, key=lambda r: r.line):
        root = root_of.get(r.parent or "") if r.parent in ids else None
        if root is None:
            root = r.uuid or ""
            roots.append(r)
        root_of[r.uuid or ""] = root
        size[root] = size.get(root, 0) + 1
    return [(r, size.get(r.uuid or "", 1)) for r in roots]


def _note_inline_subagents(rows: list[Row], f: FileState, out: list[Diagnostic]) -> None:
    """One note per inline subagent conversation (a root sidechain row and what hangs off it)."""
    for root_row, n in _branches(rows):
        out.append(
            Diagnostic(
                f.path, root_row.line, "subagent-sidechain",
                f"{n} row(s) from here are a subagent's conversation kept in the main file (isSidechain), "
                "not part of the session's own chain",
            )
        )  # fmt: skip
