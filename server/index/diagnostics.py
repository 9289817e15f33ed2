"""The diagnostics catalogue (stable codes and their severities) and the `Diagnostic` record."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
        }

    def sort_key(self) -> tuple[str, int, int, str]:
        return (str(self.path), self.line, SEVERITY_RANK[self.severity], self.code)
