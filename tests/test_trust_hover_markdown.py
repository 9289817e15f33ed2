"""A transcript's text in a hover is shown, never rendered as Markdown: no image fetched, no link, no HTML, no
line posing as one of ours.

The real server over stdio hovers every line of a session whose fields carry Markdown and HTML; each hover is
parsed as the editors parse it (markdown-it with linkify, as GFM does), and must be one paragraph of text, code
spans, hard line breaks and our own bold label, with every hostile value shown in it as written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from rawlsp import RawServer

from server.features.markdowntext import code, text
from storage.terminaltext import one_line

SID = "7c5a1e2b-4d3f-4a6b-9c8d-0e1f2a3b4c5d"
IMAGE = "![seen](https://attacker.invalid/pixel.png)"
LINK = "[resume here](https://attacker.invalid/phish)"
HTML = '<img src="https://attacker.invalid/x.png"><script>alert(1)</script>'
FAKE_LINE = "x\non the resume chain\n# heading"
BACKTICKS = "``` `x` " + IMAGE
BARE_URL = "https://attacker.invalid/bare"

HOSTILE = [IMAGE, LINK, HTML, FAKE_LINE, BACKTICKS, BARE_URL]
"""Every value an attacker writes into a field; each must be shown as written (newlines written out)."""

ALLOWED = {"text", "code_inline", "hardbreak", "softbreak", "strong_open", "strong_close"}
"""What a hover's one paragraph may hold: our own bold label, text, code spans, line breaks."""


def _rows() -> list[dict[str, Any]]:
    u1 = f"u1 {IMAGE}"
    u2 = f"u2 {BACKTICKS}"
    u3 = f"u3 {LINK}"
    base = {"sessionId": SID, "cwd": "/tmp/x", "isSidechain": False}
    return [
        {
            **base,
            "type": "user",
            "uuid": u1,
            "parentUuid": None,
            "timestamp": f"2026-01-01 {IMAGE}",
            "message": {"role": f"user {HTML}", "content": "hi"},
        },
        {
            **base,
            "type": "assistant",
            "uuid": u2,
            "parentUuid": u1,
            "timestamp": FAKE_LINE,
            "message": {
                "role": "assistant",
                "id": f"msg {LINK}",
                "model": f"claude {HTML}",
                "usage": {f"input_tokens {LINK}": 3, "output_tokens": 1},
                "content": [{"type": "tool_use", "id": f"toolu {BACKTICKS}", "name": f"Bash {IMAGE}", "input": {}}],
            },
        },
        {
            **base,
            "type": "user",
            "uuid": u3,
            "parentUuid": u2,
            "timestamp": BARE_URL,
            "agentId": f"agent {FAKE_LINE}",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu {BACKTICKS}", "content": "ok"}],
            },
        },
        {
            **base,
            "type": "system",
            "subtype": f"compact_boundary {IMAGE}",
            "uuid": "u4",
            "parentUuid": None,
            "logicalParentUuid": f"lp {LINK}",
            "compactMetadata": {"trigger": HTML, "preTokens": IMAGE, "postTokens": FAKE_LINE},
            "timestamp": "2026-01-01T00:00:03Z",
        },
        {"type": "summary", "summary": "s", "leafUuid": f"leaf {IMAGE}"},
        {**base, "type": f"custom {IMAGE}", "uuid": f"u5 {HTML}", "parentUuid": "u4", "timestamp": LINK},
    ]


@pytest.fixture
def session(projects: Path) -> Path:
    folder = projects / "-tmp-x"
    folder.mkdir()
    path = folder / f"{SID}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _rows()))
    return path


def _hovers(projects: Path, path: Path) -> list[str]:
    lines = len(path.read_text().splitlines())
    with RawServer() as server:
        server.initialize(projects, watch=False)
        found = []
        for line in range(lines):
            reply = server.call(
                "textDocument/hover",
                {"textDocument": {"uri": path.as_uri()}, "position": {"line": line, "character": 0}},
            )
            assert "error" not in reply, reply
            if reply["result"] is not None:
                found.append(reply["result"]["contents"]["value"])
    return found


def _shown(markdown: str) -> tuple[list[str], str]:
    """The token types of the one paragraph, and the text a reader sees (code spans' text included)."""
    tokens = MarkdownIt("commonmark").enable("linkify").parse(markdown)
    kinds = [t.type for t in tokens]
    assert kinds == ["paragraph_open", "inline", "paragraph_close"], (kinds, markdown)
    children = tokens[1].children or []
    return [c.type for c in children], "".join(c.content for c in children if c.type in ("text", "code_inline"))


def test_a_hover_shows_a_transcripts_markdown_as_text(projects: Path, session: Path) -> None:
    hovers = _hovers(projects, session)
    assert len(hovers) >= 5, hovers
    seen = ""
    for markdown in hovers:
        kinds, text = _shown(markdown)
        assert set(kinds) <= ALLOWED, (set(kinds) - ALLOWED, markdown)
        seen += text + "\n"
    for value in HOSTILE:
        assert value.replace("\n", "⟨U+000A⟩") in seen, value


def test_code_spans_and_text_hold_any_value() -> None:
    samples = [
        "",
        " ",
        "`",
        "``",
        " a ",
        "`a`",
        "a ``` b",
        "\\`x\\`",
        "*a* _b_ **c** ~~d~~",
        "&amp; &#x41; <b>",
        "a\r\nb\u202ec\u0007",
        IMAGE,
        LINK,
        HTML,
        BARE_URL,
        "evil.com/x www.evil.com //evil.com a@b.com mailto:a@b.co ftp://evil.com",
        "_under_ snake_case_name *star* ~~strike~~",
    ]
    md = MarkdownIt("commonmark").enable("linkify")
    for value in samples:
        for render, kind in ((code, "code_inline"), (text, "text")):
            tokens = md.parse(f"a {render(value)} z")
            children = tokens[1].children or []
            assert {c.type for c in children} <= {"text", "code_inline"}, (value, render(value), children)
            shown = "".join(c.content for c in children)
            assert shown == f"a {one_line(value)} z" or (kind == "code_inline" and value == ""), (value, shown)


def test_plain_values_read_without_escapes() -> None:
    """Neovim 0.7 shows a hover's backslash escapes as they are: what holds no markup is left as it is."""
    for value in ("2026-12-02T05:10:37.913Z", "claude-opus-5-5", "cache_creation_input", "auto", "167000", "2.1.332"):
        assert text(value) == value
