"""Links that cross files: settling a session's pending references against the whole index.

A link is looked up only in the files of its own project folder: the CLI resumes a session from its
folder, so a row of another project's file is never the target it means.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from server.index.checks import Pending
from server.index.diagnostics import Diagnostic, Related

Lookup = Callable[[str], list[tuple[Path, int]]]
"""uuid -> (file, 0-based line) of every row with that uuid."""
SessionLookup = Callable[[str], Path | None]

LINK_RULES: dict[str, tuple[str, str, str, str]] = {
    "parent": ("parentUuid", "cross-file-parent", "parent", "dangling-parent"),
    "logical-parent": ("logicalParentUuid", "cross-file-logical-parent", "logical parent", "dangling-logical-parent"),
    "leaf": ("leafUuid", "cross-file-leaf", "leaf", "dangling-leaf"),
}
"""Pending kind -> (key, code when found in another file, what the target is, code when found nowhere)."""


def resolve(pending: list[Pending], lookup: Lookup, session_file: SessionLookup) -> list[Diagnostic]:
    """Diagnostics for links a session could not resolve itself (found elsewhere, or nowhere)."""
    out: list[Diagnostic] = []
    for p in pending:
        if p.kind == "fork":
            out.extend(_fork(p, lookup, session_file))
            continue
        rule = LINK_RULES.get(p.kind)
        if rule is None:
            continue
        key, cross_code, what, dangling_code = rule
        home = project_of(p.path)
        found = [(path, line) for path, line in lookup(p.target) if path != p.path and project_of(path) == home]
        if found:
            out.append(_cross(p, found, key, cross_code, what))
        else:
            prefix = f"{p.extra} " if p.kind == "leaf" else ""
            out.append(Diagnostic(p.path, p.line, dangling_code, f"{prefix}{key} {p.target} is in no file", key=key))
    return out


def project_of(path: Path) -> Path:
    """The project folder of a session, subagent or agent file."""
    parts = path.parts
    if "subagents" in parts:
        i = len(parts) - 1 - parts[::-1].index("subagents")
        return Path(*parts[: i - 1])
    return path.parent


def _cross(p: Pending, found: list[tuple[Path, int]], key: str, code: str, what: str) -> Diagnostic:
    where = ", ".join(f"{path.name}:{line + 1}" for path, line in found[:3])
    cut = ": resume does not follow it there, so the conversation it rebuilds starts here" if p.kind == "parent" else ""
    return Diagnostic(
        p.path, p.line, code, f"{key} {p.target} is in another file ({where}){cut}",
        [Related(path, line, f"the {what}") for path, line in found[:20]], key=key,
    )  # fmt: skip


def _fork(p: Pending, lookup: Lookup, session_file: SessionLookup) -> list[Diagnostic]:
    source = session_file(p.extra or "")
    if source is not None and project_of(source) != project_of(p.path):
        source = None
    if source is None:
        return [
            Diagnostic(
                p.path, p.line, "dangling-fork", f"forked from session {p.extra}, which is not here", key="forkedFrom"
            )
        ]
    hits = [(path, line) for path, line in lookup(p.target) if path == source]
    if not hits:
        return [
            Diagnostic(
                p.path,
                p.line,
                "dangling-fork",
                f"forked from message {p.target}, which is not in {source.name}",
                [Related(source, 0, "the source session")],
                key="forkedFrom",
            )
        ]
    return []
