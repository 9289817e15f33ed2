"""The diagnostics catalogue (stable codes and their severities) and the `Diagnostic` record."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from storage.badlines import KEPT_PROBLEMS

ERROR, WARNING, INFORMATION, HINT = "error", "warning", "information", "hint"
SEVERITY_RANK = {ERROR: 1, WARNING: 2, INFORMATION: 3, HINT: 4}
"""The LSP `DiagnosticSeverity` numbers."""

CATALOGUE: dict[str, tuple[str, str]] = {
    "invalid-json": (ERROR, "a complete line that is not a JSON object; the CLI skips it"),
    "torn-tail": (WARNING, "the last line ends without a newline and does not parse (a torn write)"),
    "line-too-long": (ERROR, "a line over 128 MiB (storage.linechunks.MAX_LINE_BYTES): not read, its row left out"),
    "parent-cycle": (ERROR, "parentUuid links that loop; naive readers hang on them"),
    "dangling-parent": (WARNING, "parentUuid found in no file: resume falls back or stops there"),
    "cross-file-parent": (WARNING, "parentUuid found only in another file of the project: resume stops there"),
    "cross-file-logical-parent": (INFORMATION, "a compact boundary's logicalParentUuid found only in another file"),
    "dangling-logical-parent": (INFORMATION, "a compact boundary's logicalParentUuid found in no file"),
    "duplicate-uuid": (WARNING, "a uuid written twice in one file: the later row wins"),
    "orphan-tool-result": (WARNING, "a tool_result whose tool_use is nowhere in the session"),
    "unanswered-tool-use": (INFORMATION, "a tool_use with no tool_result (in flight, or a killed turn)"),
    "dangling-leaf": (WARNING, "a summary's or an earlier last-prompt's leafUuid found in no file"),
    "cross-file-leaf": (INFORMATION, "a summary's or last-prompt's leafUuid found only in another file"),
    "unreachable-branch": (INFORMATION, "rows that neither the resume leaf nor the newest row reaches (rewinds)"),
    "subagent-sidechain": (INFORMATION, "a subagent's conversation kept inline in the main file (CLIs before 2.0)"),
    "missing-subagent": (WARNING, "an Agent call whose result names a subagent with no transcript file"),
    "dangling-fork": (INFORMATION, "forkedFrom names a session or message that is not (or no longer) there"),
    "session-id-mismatch": (HINT, "rows whose sessionId is not the file's session"),
    "lenient-json": (HINT, "a line with a lone surrogate escape or invalid UTF-8, read as the CLI reads it (U+FFFD)"),
    "missing-uuid": (WARNING, "conversation rows without a uuid: the CLI keeps only the last of them"),
    "unknown-type": (INFORMATION, "an entry type this reader does not know (once per type per file)"),
}


@dataclass(slots=True)
class Related:
    path: Path
    line: int
    message: str


@dataclass(slots=True)
class Diagnostic:
    """One finding. `line` is 0-based; columns, when known, count UTF-16 units (LSP default)."""

    path: Path
    line: int
    code: str
    message: str
    related: list[Related] = field(default_factory=list)
    start_char: int | None = None
    end_char: int | None = None
    key: str | None = None
    """The JSON key whose value the range should cover (filled in by `ranges.locate`)."""
    more: int = 0
    """How many more diagnostics of its code in its file this one stands for (`bounded`): from its line to its
    related line, not listed one by one."""

    @property
    def severity(self) -> str:
        return CATALOGUE[self.code][0]

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "line": self.line + 1,
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "related": [{"path": str(r.path), "line": r.line + 1, "message": r.message} for r in self.related],
        } | ({"more": self.more} if self.more else {})

    def sort_key(self) -> tuple[str, int, int, str]:
        return (str(self.path), self.line, SEVERITY_RANK[self.severity], self.code)


MAX_OF_A_KIND = KEPT_PROBLEMS  # the reader keeps as many bad lines of a kind per file, and folds the rest as here
"""The most diagnostics of one code given for one file: a file of random bytes (anything can land in the folder) has
a bad line every few hundred bytes, and 20 MB of them made 82,051 diagnostics, 19 MB of JSON for the editor to take
in one answer. Past the bound, one diagnostic at the first line left out says how many more there are, up to which
line."""


def bounded(diags: list[Diagnostic]) -> list[Diagnostic]:
    """`diags` sorted, with at most `MAX_OF_A_KIND` of each code in each file (those on the first lines): the rest
    are folded into one that says how many and where (`more`), folding any such one already among them."""
    out: list[Diagnostic] = []
    seen: dict[tuple[Path, str], int] = {}
    folded: dict[tuple[Path, str], list[Diagnostic]] = {}
    for d in sorted(diags, key=Diagnostic.sort_key):
        kind = (d.path, d.code)
        if d.more:
            folded.setdefault(kind, []).append(d)
            continue
        count = seen.get(kind, 0)
        seen[kind] = count + 1
        if count < MAX_OF_A_KIND:
            out.append(d)
        else:
            folded.setdefault(kind, []).append(d)
    if not folded:
        return out
    for (path, code), rest in folded.items():
        first = min(d.line for d in rest)
        last = max(d.related[0].line if d.more and d.related else d.line for d in rest)
        out.append(folded_diagnostic(path, first, code, sum(d.more or 1 for d in rest), last))
    return sorted(out, key=Diagnostic.sort_key)


def folded_diagnostic(path: Path, first: int, code: str, more: int, last: int) -> Diagnostic:
    """The one diagnostic that stands for `more` of a code in a file, from line `first` to `last`."""
    return Diagnostic(
        path, first, code,
        f"{more:,} more like this in this file, from here to line {last + 1}, not listed one by one",
        [Related(path, last, "the last of them")], more=more,
    )  # fmt: skip
