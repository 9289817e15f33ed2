"""What a terminal is given: text from transcripts and file names with every control character written out.

Transcripts hold what models, web pages, files and commands wrote, and anyone may name a file in the projects
folder: printed as they are, an ESC or a C1 control would be obeyed by the terminal (`ESC ] 52` sets the
clipboard, `ESC [ 2J` clears the screen, `ESC ] 0` renames the window, a CSI moves the cursor to draw over what
was shown), a carriage return would draw over its own line, and a right-to-left override would show a line as
another ("Trojan Source"). The rule, in one place:

- written out as `⟨U+XXXX⟩` (the notation of a permission prompt, `server.agent.permissions.visible`): C0
  controls (U+0000–U+001F), DEL (U+007F), C1 controls (U+0080–U+009F), format characters (Unicode category Cf:
  the bidirectional embeddings, overrides and isolates U+202A–U+202E and U+2066–U+2069, marks, zero-width
  spaces and joiners, the soft hyphen, the BOM, tags), the line and paragraph separators (U+2028, U+2029) and
  lone surrogates;
- kept: `\\n` and `\\t` in text shown over several lines (`escape`: a message's body, a turn's streamed reply);
  a field shown on one line (a title, path, cwd, id, branch, tool name, model, error) keeps neither
  (`one_line`), so it cannot forge a row of a table or a line of a listing.

Every other character is shown as it is (accents, CJK, emoji, private-use and unassigned code points, no-break
spaces: a terminal draws them, it does not obey them). Python's Unicode tables decide the categories, so a format
character newer than them is not known as one.

Where it applies: `server.cli.main` puts a `TerminalStream` in front of stdout and stderr (`guard_output`) before
any command runs, so everything a command prints, its errors and the log lines it writes there pass through
`escape`; what prints a field on one line passes it through `one_line` as it makes the line. JSON output
(`--json`, `turn --events`) is written to the byte buffer below the stream, and its data stays exact: its readers
want what was recorded, not our notation. It is inert all the same: JSON escapes C0 itself, and `inert_json`
writes the other escaped characters as JSON escapes (`\\u009b`, `\\u202e`), which a JSON reader
decodes to the very same string (a program that then prints the data must escape it itself).
A stored `⟨U+001B⟩` (those eight characters) shows as an escaped ESC would: the notation is for reading, not
for reversing.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Callable, Iterable
from typing import TextIO, cast

ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""The Unicode general categories written out: controls, format characters, surrogates, line and paragraph
separators."""


def written_out(ch: str) -> str:
    """How a character that is not shown as it is gets shown: `⟨U+001B⟩`."""
    return f"⟨U+{ord(ch):04X}⟩"


def is_escaped(ch: str) -> bool:
    """Whether `ch` is written out wherever it is (`\\n` and `\\t` too: text over several lines keeps those)."""
    return unicodedata.category(ch) in ESCAPED_CATEGORIES


def json_escaped(ch: str) -> str:
    """`ch` as a JSON string writes it escaped: `\\u009b`, or a surrogate pair past U+FFFF."""
    code = ord(ch)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


TABLE_MAX = 4096
"""Decisions a table keeps: a text holding every code point must not make it hold them all."""


class _Table(dict[int, str]):
    """`str.translate`'s table: what a code point is shown as, decided when first met and kept (up to
    `TABLE_MAX` of them)."""

    def __init__(self, kept: str, shown: Callable[[str], str]) -> None:
        super().__init__((ord(ch), ch) for ch in kept)
        self.shown = shown

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        shown = self.shown(ch) if is_escaped(ch) else ch
        if len(self) < TABLE_MAX:
            self[code] = shown
        return shown


_BODY = _Table("\n\t", written_out)
_LINE = _Table("", written_out)
_JSON = _Table("", json_escaped)
_BELOW_DEL = bytes(range(0x7F))
_PAST_TILDE = re.compile(r"[^\x00-\x7e]+")
"""Runs of DEL and what is past ASCII (JSON leaves them raw)."""


def escape(text: str) -> str:
    """`text` for a terminal, over as many lines as it has: every escaped character written out but `\\n`, `\\t`."""
    return text if text.isprintable() else text.translate(_BODY)


def one_line(value: object) -> str:
    """`value` (as `str`) for a terminal, on one line: every escaped character written out, `\\n` and `\\t` too."""
    text = value if isinstance(value, str) else str(value)
    return text if text.isprintable() else text.translate(_LINE)


def inert_json(data: bytes) -> bytes:
    """JSON text (UTF-8) with every escaped character of its strings written as a JSON escape (`\\u202e`), so the
    JSON reads as the same data and a terminal it is printed on obeys none of it (JSON escapes C0 itself; DEL, C1
    and format characters it leaves as they are)."""
    past = data.translate(None, _BELOW_DEL)  # whole UTF-8 sequences: ASCII is never inside one
    if not past or past.decode("utf-8").isprintable():  # what a listing usually is: nothing to escape
        return data
    text = data.decode("utf-8")
    return _PAST_TILDE.sub(lambda m: m[0] if m[0].isprintable() else m[0].translate(_JSON), text).encode("utf-8")


class TerminalStream:
    """A text stream in front of another (stdout, stderr) that writes everything it is given through `escape`.

    Whatever else a stream has (`buffer`, `fileno`, `isatty`, `encoding`, ...) is the one behind it: bytes written
    to `buffer` (JSON) pass unchanged."""

    def __init__(self, behind: TextIO) -> None:
        self.behind = behind

    def write(self, text: str) -> int:
        self.behind.write(escape(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.behind.flush()

    def __getattr__(self, name: str) -> object:
        return getattr(self.behind, name)


def unguarded(stream: TextIO) -> TextIO:
    """The stream behind a `TerminalStream` (for a progress bar's own `\\r`, which holds no data), else `stream`."""
    return stream.behind if isinstance(stream, TerminalStream) else stream


def guard_output(*, stdout: bool = True) -> Callable[[], None]:
    """Put a `TerminalStream` in front of `sys.stderr` and (unless told not to: `serve --stdio` speaks the protocol
    there) `sys.stdout`; returns what puts the streams back."""
    before = sys.stdout, sys.stderr
    if stdout and not isinstance(sys.stdout, TerminalStream):
        sys.stdout = cast(TextIO, TerminalStream(sys.stdout))
    if not isinstance(sys.stderr, TerminalStream):
        sys.stderr = cast(TextIO, TerminalStream(sys.stderr))

    def restore() -> None:
        sys.stdout, sys.stderr = before

    return restore
