"""Values from a transcript put into Markdown that an editor renders (the hover): shown as text, never obeyed.

A transcript's fields are anyone's text (a model's, a web page's, a file's), and the editors render a hover's
Markdown: VS Code with markdown-it, which draws `![](https://...)` by fetching the image when the hover opens
(telling a stranger the session was looked at, from where), and makes `[text](url)` a link; a backtick in a
uuid ends its code span, so what follows is Markdown again; a `\\n` starts a line that can pose as one of ours
("on the resume chain"). Here every value is either a code span that holds it whole (`code`: a fence longer than
any run of backticks in it) or text whose Markdown punctuation is escaped (`text`: CommonMark's backslash escapes
every ASCII punctuation character, so nothing in it opens an image, a link, an autolink, HTML, an entity or
emphasis). Both show a control or format character written out, on one line (`storage.terminaltext.one_line`).
"""

from __future__ import annotations

import re

from storage.terminaltext import one_line

_PUNCTUATION = re.compile(r"""([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])""")
_BACKTICKS = re.compile(r"`+")


def text(value: object) -> str:
    """`value` as Markdown text that renders as itself."""
    return _PUNCTUATION.sub(r"\\\1", one_line(value))


def code(value: object) -> str:
    """`value` as an inline code span that holds it whole, whatever backticks it has."""
    shown = one_line(value)
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(shown)), default=0) + 1)
    padded = shown.startswith(" ") and shown.endswith(" ") and shown.strip()
    if shown.startswith("`") or shown.endswith("`") or padded:
        shown = f" {shown} "  # CommonMark takes one space off each end: the value keeps its own
    return f"{fence}{shown}{fence}"
