"""Patterns the model sends (Grep's regular expressions, glob patterns) compiled for RE2, an engine
that runs in time linear in its input: no pattern can backtrack forever and hang a turn.

RE2 takes the usual Perl/Python syntax except backreferences and lookaround, as ripgrep (which the
CLI's Grep runs) does not take them either."""

from __future__ import annotations

import re
from collections.abc import Iterator

import re2

from server.agent.tools.base import ToolError

_DOTDOT = re.compile(r"(?:^|[/{,])\.\.(?:$|[/},])")
_TEXT_ANCHOR = re.compile(r"\\[Az]")


def _options(ignore_case: bool = False) -> re2.Options:
    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = not ignore_case
    return options


def _message(exc: Exception) -> str:
    arg = exc.args[0] if exc.args else exc
    return arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)


class LinePattern:
    """Grep's regular expression, matched line by line (lines end at `\\n`, as in grep). The search
    runs over the whole text at once, where no match may cross a newline and `^`/`$` match at line
    ends, which finds the same lines with one call per match instead of one per line."""

    def __init__(self, pattern: str, *, ignore_case: bool = False) -> None:
        try:
            self.line = re2.compile(pattern, _options(ignore_case))
        except re2.error as exc:
            raise ToolError(
                f"Invalid regular expression {pattern!r}: {_message(exc)} "
                "(Grep uses RE2 syntax: no backreferences or lookaround)"
            ) from None
        self.whole: re2._Regexp | None = None
        if not _TEXT_ANCHOR.search(pattern):  # \A and \z: line start and end per line, text start and end at once
            whole = _options(ignore_case)
            whole.never_nl = True
            # each match takes the rest of its line: one match a line, not one per character of a minified line
            # (2 MiB of them took seconds); not where a `\Q` may be left open, taking what follows as literal text
            lined = pattern if "\\Q" in pattern else f"(?:{pattern})[^\n]*"
            self.whole = re2.compile("(?m)" + lined, whole)

    def matching_lines(self, text: str) -> Iterator[tuple[int, str]]:
        """(line number from 1, line) for every line of `text` with a match."""
        if not text:
            return
        end = len(text) - 1 if text.endswith("\n") else len(text)
        if self.whole is None:
            for number, line in enumerate(text[:end].split("\n"), 1):
                if self.line.search(line):
                    yield number, line
            return
        number, counted, last = 1, 0, 0
        for match in self.whole.finditer(text):
            start = match.start()
            if start > end:
                break
            number += text.count("\n", counted, start)
            counted = start
            if number == last:
                continue
            last = number
            begin = text.rfind("\n", 0, start) + 1
            stop = text.find("\n", start)
            yield number, text[begin : stop if stop >= 0 else len(text)]


def refuse_dotdot(pattern: str, what: str = "a glob pattern") -> None:
    """Globs match paths below the folder searched; a `..` segment could only mean leaving it."""
    if _DOTDOT.search(pattern):
        raise ToolError(f"'..' is not allowed in {what} ({pattern!r}): it would reach outside the folder searched")


def glob_regex(pattern: str) -> re2._Regexp:
    """A glob with `**`, `*`, `?`, `[...]` and `{a,b}` as an RE2 regex over posix relative paths."""
    out: list[str] = []
    i = 0
    depth = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
                i = end
        elif c == "{":
            out.append("(?:")
            depth += 1
        elif c == "}" and depth:
            out.append(")")
            depth -= 1
        elif c == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    try:
        return re2.compile("".join(out) + ")" * depth, _options())
    except re2.error as exc:
        raise ToolError(f"Invalid glob pattern {pattern!r}: {_message(exc)}") from None
