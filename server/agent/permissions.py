"""Asking the person before a tool the turn was not allowed up front (Bash, Edit, Write) runs.

The turn offers every tool when it has someone to ask. Before a response's calls run, each call of
a tool not yet allowed is put to `ask` (the language server sends `sessions/permission` to the
editor); the answer is `allow` (this call), `allowSession` (this tool for the rest of the session,
remembered by the caller's `SessionGrants` for that session's file in that working directory) or `deny`. No answer
in time is a denial. A denial ends the turn the way the CLI records a "No" at its prompt: the calls allowed before
it run, the denied call and those after it get the CLI's rejected result, then
`[Request interrupted by user for tool use]`, so the real CLI resumes the file.
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from server.agent.tools.write import replaces_all
from storage.terminaltext import written_out

Decision = Literal["allow", "allowSession", "deny"]
DECISIONS: tuple[Decision, ...] = ("allow", "allowSession", "deny")
ASK_TIMEOUT = 120.0
"""Seconds the person has to answer; then the call is denied."""


@dataclass(frozen=True)
class PermissionAsk:
    session_id: str
    tool: str
    tool_use_id: str
    input: dict[str, Any]
    cwd: str

    def to_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "tool": self.tool,
            "toolUseId": self.tool_use_id,
            "input": self.input,
            "cwd": self.cwd,
            "preview": preview(self.tool, self.input),
        }


Ask = Callable[[PermissionAsk], Decision]


PREVIEW_MAX = 3000
"""Characters of a preview shown; a longer one says how much more will run (the editors cut at 4000)."""
SPACE_RUN = 8
"""Spaces or tabs in a row after a line's first other character shown as a count instead: a long run could push the
rest of the line out of sight. Indentation is shown as it is, unless longer than `INDENT_MAX`."""
INDENT_MAX = 64
DRAWN_BLANK = frozenset(
    {0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x2800, 0x3164, 0xFFA0}
    | set(range(0x180B, 0x1810))
    | set(range(0xFE00, 0xFE10))
    | set(range(0xE0100, 0xE01F0))
)
"""Characters drawn as nothing or as a blank that are neither spaces nor controls nor format characters, so no rule
by category finds them: the invisible marks (combining grapheme joiner, Khmer inherent vowels, Mongolian and other
variation selectors), the Hangul fillers (letters) and U+2800 BRAILLE PATTERN BLANK (a symbol). To bash they are part
of a word, so a run of them pushed the rest of a line out of sight as a run of spaces would."""
BLANK_LINES = 3
"""Empty (or only blank) lines in a row shown as a count instead: a run of them pushes the rest of a command below
what the dialog shows at first, so a harmless first line could be all one reads."""


def preview(tool: str, tool_input: dict[str, Any]) -> str:
    """What the person is asked about: the command, or the edit as a small diff (saying so when it replaces every
    occurrence); every character that would not show, or would show as something else, made visible (`visible`),
    and a cut said at its start."""
    if tool == "Bash":
        shown = visible(str(tool_input.get("command", "")))
    elif tool == "Write":
        shown = f"write {_path(tool_input)}:\n" + _lines("+", tool_input.get("content"))
    elif tool == "Edit":
        old, new = _lines("-", tool_input.get("old_string")), _lines("+", tool_input.get("new_string"))
        every = ", every occurrence" if replaces_all(tool_input) else ""
        shown = f"edit {_path(tool_input)}{every}:\n{old}{new}"
    else:
        shown = visible(str(tool_input))
    if len(shown) <= PREVIEW_MAX:
        return shown
    return f"[{len(shown):,} characters; the first {PREVIEW_MAX:,} are shown; an answer holds for all of them]\n" + (
        shown[:PREVIEW_MAX] + "\n…"
    )


def _path(tool_input: dict[str, Any]) -> str:
    """The file a Write or Edit changes, on one line: a newline in it is written out too, else the lines of a path
    read as the diff's (`write notes.md:` above a line of content, the file written `.git/hooks/pre-commit`)."""
    return visible(str(tool_input.get("file_path"))).replace("\n", written_out("\n"))


def _lines(mark: str, text: Any) -> str:
    """Each line of `text` made visible, after `mark` (a diff's + or -)."""
    shown = visible(str(text or ""))
    return "".join(f"{mark}{line}\n" for line in shown.removesuffix("\n").split("\n")) if shown else ""


def visible(text: str) -> str:
    """`text` with what a dialog would hide, or draw as something else, written out as `⟨U+XXXX⟩` (the command
    line's notation, `storage.terminaltext`; a prompt's rule is stricter): control
    characters but the newline, format characters (bidirectional overrides and zero-width spaces make a command
    read as another), separators but the plain space (a no-break space is not one to the shell), private and
    unassigned code points, what is drawn as a blank (`DRAWN_BLANK`); long runs of spaces or tabs as `⟨N blanks⟩`
    (`SPACE_RUN`, `INDENT_MAX`), and of blank lines as `⟨N blank lines⟩` (`BLANK_LINES`)."""
    out: list[str] = []
    run = ""
    line_start = True
    for ch in text:
        if ch in " \t":
            run += ch
            continue
        if run:
            out.append(_blanks(run, line_start))
            run = ""
        line_start = ch == "\n"
        out.append(ch if ch == "\n" or not _hidden(ch) else written_out(ch))
    if run:
        out.append(_blanks(run, line_start))
    return _blank_lines("".join(out))


def _hidden(ch: str) -> bool:
    """Whether `ch` would not show, or would show as something else: a control, format, separator, private or
    unassigned character, or one drawn as a blank (`DRAWN_BLANK`)."""
    return unicodedata.category(ch)[0] in "CZ" or ord(ch) in DRAWN_BLANK


def _blanks(run: str, indent: bool) -> str:
    return f"⟨{len(run)} blanks⟩" if len(run) > (INDENT_MAX if indent else SPACE_RUN - 1) else run


def _blank_lines(text: str) -> str:
    """`text` with each run of `BLANK_LINES` or more lines holding nothing but spaces and tabs as one line
    `⟨N blank lines⟩` (a final newline ends the last line, it starts no other)."""
    body, end = (text[:-1], "\n") if text.endswith("\n") else (text, "")
    out: list[str] = []
    run: list[str] = []
    for line in [*body.split("\n"), None]:
        if line is not None and not line.strip(" \t"):
            run.append(line)
            continue
        out.extend([f"⟨{len(run)} blank lines⟩"] if len(run) >= BLANK_LINES else run)
        run = []
        if line is not None:
            out.append(line)
    return "\n".join(out) + end


@dataclass(frozen=True)
class GrantScope:
    """What an "allow for the session" answer was given for: the session as the person knew it (`session`: the real
    path of its transcript, or a session store's key for a store's session) run in its working directory (`cwd`: the
    real path of the turn's root). A session id names neither: a turn may resume a session in another `cwd` (an
    untrusted checkout), and a file of the same id may be in another project folder."""

    session: str
    cwd: str


@dataclass
class SessionGrants:
    """Tools allowed for the rest of a session, by `GrantScope` (kept by the server across turns): a grant holds only
    for the same session file (or store session) in the same working directory."""

    by_scope: dict[GrantScope, set[str]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def allowed(self, scope: GrantScope, tool: str) -> bool:
        with self._lock:
            return tool in self.by_scope.get(scope, set())

    def grant(self, scope: GrantScope, tool: str) -> None:
        with self._lock:
            self.by_scope.setdefault(scope, set()).add(tool)


def parse_decision(answer: Any) -> Decision:
    """The client's answer (`{decision}`) as a Decision; anything else is a denial."""
    decision = answer.get("decision") if isinstance(answer, dict) else getattr(answer, "decision", None)
    return decision if decision in DECISIONS else "deny"
