"""Patterns the model sends (Grep's regular expressions, glob patterns) compiled for RE2, an engine
that runs in time linear in its input: no pattern can backtrack forever and hang a turn.

RE2 takes the usual Perl/Python syntax except backreferences and lookaround, as ripgrep (which the
CLI's Grep runs) does not take them either."""

from __future__ import annotations

import re

import re2

from server.agent.tools.base import ToolError

_DOTDOT = re.compile(r"(?:^|[/{,])\.\.(?:$|[/},])")


def _options(ignore_case: bool = False) -> re2.Options:
    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = not ignore_case
    return options


def _message(exc: Exception) -> str:
    arg = exc.args[0] if exc.args else exc
    return arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)


def compile_regex(pattern: str, *, ignore_case: bool = False) -> re2._Regexp:
    """Grep's pattern, or a ToolError that says what is wrong with it."""
    try:
        return re2.compile(pattern, _options(ignore_case))
    except re2.error as exc:
        raise ToolError(
            f"Invalid regular expression {pattern!r}: {_message(exc)} "
            "(Grep uses RE2 syntax: no backreferences or lookaround)"
        ) from None


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
