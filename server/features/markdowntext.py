"""Values from a transcript put into Markdown that an editor renders (the hover): shown as text, never obeyed.

A transcript's fields are anyone's text (a model's, a web page's, a file's), and the editors render a hover's
Markdown: VS Code draws `![](https://...)` by fetching the image when the hover opens (telling a stranger the
session was looked at, from where), and makes `[text](url)` a link; a backtick in a uuid ends its code span, so what
follows is Markdown again; a `\\n` starts a line that can pose as one of ours ("on the resume chain"). Here every
value is either a code span that holds it whole (`code`: a fence longer than any run of backticks in it) or text
with the characters that could start markup backslash-escaped (`text`): backslash, backtick, `*`, `[`, `]`, `<`,
`&`, `~`, `@` (an email autolink), `_` at a word's edge (emphasis; inside a word it is none), `/` before another `/`
(a URL's `//`: bare links, GFM's and linkify's) and `.` before a letter (a bare domain). Only those: Neovim 0.7
draws a hover's backslash escapes as they are, so a timestamp escaped at every `:`, `-` and `.` read
`2026\\-12\\-02T05\\:10`. Both show a control or format character written out, on one line
(`storage.terminaltext.one_line`).
"""

from __future__ import annotations

import re

from storage.terminaltext import one_line

_MARKUP = re.compile(r"[\\`*\[\]<&~@]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])|/(?=/)|\.(?=[A-Za-z])")
_BACKTICKS = re.compile(r"`+")


def text(value: object) -> str:
    """`value` as Markdown text that renders as itself."""
    return _MARKUP.sub(lambda m: "\\" + m[0], one_line(value))


def code(value: object) -> str:
    """`value` as an inline code span that holds it whole, whatever backticks it has."""
    shown = one_line(value)
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(shown)), default=0) + 1)
    padded = shown.startswith(" ") and shown.endswith(" ") and shown.strip()
    if shown.startswith("`") or shown.endswith("`") or padded:
        shown = f" {shown} "  # CommonMark takes one space off each end: the value keeps its own
    return f"{fence}{shown}{fence}"
