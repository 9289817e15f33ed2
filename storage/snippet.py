"""A search hit's snippet: the text around the first match of the query's words, the matches marked.

The words are the query's tokens as the full-text index splits them (runs of letters and digits),
matched whole and case-blind, the last one as a prefix, as `storage.search` queries them. Cutting
the snippet with a regular expression costs microseconds; FTS5's `snippet()` tokenizes the whole
document for each hit.
"""

from __future__ import annotations

import re

SNIPPET_BEFORE = 60
SNIPPET_AFTER = 100
"""Characters of context a snippet keeps before and after its first match."""


def word_pattern(query: str) -> re.Pattern[str] | None:
    """The query's tokens as the index splits them (runs of letters and digits), matched whole and
    case-blind; the last one as a prefix."""
    tokens = re.findall(r"\w+", query)
    if not tokens:
        return None
    parts = [re.escape(t) + (r"\w*" if i == len(tokens) - 1 else r"\b") for i, t in enumerate(tokens)]
    return re.compile(r"\b(?:" + "|".join(parts) + ")", re.IGNORECASE)


def cut_snippet(text: str, pattern: re.Pattern[str]) -> str | None:
    """About `SNIPPET_BEFORE` + `SNIPPET_AFTER` characters around the first match of `pattern`, each
    match in them marked `[...]`, `…` where text was cut; None when nothing matches."""
    first = pattern.search(text)
    if first is None:
        return None
    start = max(0, first.start() - SNIPPET_BEFORE)
    end = min(len(text), first.end() + SNIPPET_AFTER)
    if start > 0:
        space = text.find(" ", start, first.start())
        start = space + 1 if space >= 0 else start
    if end < len(text):
        space = text.rfind(" ", first.end(), end)
        end = space if space >= 0 else end
    marked = pattern.sub(lambda m: f"[{m.group(0)}]", text[start:end])
    return ("…" if start > 0 else "") + marked + ("…" if end < len(text) else "")
