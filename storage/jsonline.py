"""One transcript line as the CLI writes it (compact JSON, raw UTF-8, `parentUuid` first, no lone
surrogates, `\\n`-terminated) and as the CLI reads it (`loads_line`: lone surrogate escapes and
invalid UTF-8 bytes become U+FFFD, as a JavaScript reader turns them).

Nesting is data too: the CLI (Node's `JSON.parse` and `JSON.stringify`) reads and writes values nested
thousands of levels deep, orjson writes at most 254 levels and Python's own parser and our walks recurse. So
nothing here recurses on a value (`scrub_surrogates`, `dumps_any_depth`), and a line nested past what any
parser of ours takes is a bad line (`ValueError`), never a `RecursionError` out of a reader.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

BOM = b"\xef\xbb\xbf"
"""The UTF-8 byte order mark, skipped at the start of a file as the CLI skips it."""
LONE_SURROGATE = "a lone surrogate escape (a string cut mid-character), read as U+FFFD"
INVALID_UTF8 = "invalid UTF-8 bytes, read as U+FFFD"
NESTED_TOO_DEEPLY = "nested too deeply"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads_line(raw: bytes | bytearray) -> tuple[Any, str | None]:
    """Decode one line as the CLI does: `(value, note)`, `note` saying what a strict parser would
    have rejected (None when the line is strict JSON). Raises `ValueError` when even the CLI's
    reader rejects the line.

    The CLI decodes the file as UTF-8 with replacement and `JSON.parse` accepts lone surrogate
    escapes; when it sends such a string on, it carries U+FFFD in its place (seen with 2.1.328).
    """
    try:
        return orjson.loads(raw), None
    except orjson.JSONDecodeError:
        pass
    notes = []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "replace")
        notes.append(INVALID_UTF8)
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError as exc:
        raise ValueError(NESTED_TOO_DEEPLY) from exc
    except json.JSONDecodeError as exc:  # its "line 1 column 9 (char 8)" named the line 1 whatever line it was
        raise ValueError(f"{exc.msg} at column {exc.colno}") from None
    scrubbed = scrub_surrogates(value)
    if scrubbed != value:
        notes.append(LONE_SURROGATE)
    return scrubbed, "; ".join(notes) or None


def _scrub_text(text: str) -> str:
    if any("\ud800" <= ch <= "\udfff" for ch in text):
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def scrub_surrogates(value: Any) -> Any:
    """Pair up surrogate halves into real characters and replace lone ones with U+FFFD: a string as it is when
    it has none, containers (dicts, lists and tuples, as lists) copied, at any depth (no recursion)."""
    if isinstance(value, str):
        return _scrub_text(value)
    if not isinstance(value, dict | list | tuple):
        return value
    top: list[Any] = [None]
    todo: list[tuple[Any, Any, Any]] = [(value, top, 0)]  # (a container to copy, where its copy goes, its slot)
    while todo:
        source, into, slot = todo.pop()
        inner: list[tuple[Any, Any, Any]] = []
        copy: Any
        if isinstance(source, dict):
            copy = {}
            for key, item in source.items():
                key = _scrub_text(key) if isinstance(key, str) else key
                copy[key] = _scrub_leaf(item, copy, key, inner)
        else:
            copy = [None] * len(source)
            for n, item in enumerate(source):
                copy[n] = _scrub_leaf(item, copy, n, inner)
        into[slot] = copy
        todo.extend(reversed(inner))  # in order: of two keys scrubbed to one, the later value wins
    return top[0]


def _scrub_leaf(item: Any, into: Any, slot: Any, inner: list[tuple[Any, Any, Any]]) -> Any:
    """`item` scrubbed when it is no container; a container is put in `inner`, to be copied into its slot."""
    if isinstance(item, str):
        return _scrub_text(item)
    if isinstance(item, dict | list | tuple):
        inner.append((item, into, slot))
        return None
    return item


class _Raw:
    """Bytes `dumps_any_depth` writes as they are (punctuation between the values it is still to write)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


def _dump_leaf(value: Any) -> bytes:
    if isinstance(value, str):
        return orjson.dumps(_scrub_text(value))
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value).encode()  # past 64 bits too (orjson refuses them), as JSON.stringify writes a number
    return orjson.dumps(value)


def dumps_any_depth(value: Any) -> bytes:
    """`value` as compact JSON, byte for byte as `orjson.dumps(scrub_surrogates(value))` writes it, at any depth
    (orjson stops at 254 levels) and with integers of any size, without recursion: what the CLI's
    `JSON.stringify` writes of a row nested deeper (a model's tool input, a tool's result). Dict keys must be
    strings, as for orjson."""
    out = bytearray()
    todo: list[Any] = [value]
    while todo:
        item = todo.pop()
        if item.__class__ is _Raw:
            out += item.data
        elif isinstance(item, dict):
            parts: list[Any] = [_Raw(b"}")]
            for n, (key, inner) in enumerate(reversed(item.items())):
                if not isinstance(key, str):
                    raise TypeError(f"Dict key must be str, not {type(key).__name__}")
                parts += (inner, _Raw((b"" if n == len(item) - 1 else b",") + orjson.dumps(_scrub_text(key)) + b":"))
            out += b"{"
            todo += parts
        elif isinstance(item, list | tuple):
            parts = [_Raw(b"]")]
            for n, inner in enumerate(reversed(item)):
                parts += (inner, _Raw(b"" if n == len(item) - 1 else b","))
            out += b"["
            todo += parts
        else:
            out += _dump_leaf(item)
    return bytes(out)


def parent_first(entry: dict[str, Any]) -> dict[str, Any]:
    """The same entry with `parentUuid` as its first key (when it has one)."""
    if "parentUuid" not in entry or next(iter(entry)) == "parentUuid":
        return entry
    return {"parentUuid": entry["parentUuid"], **{k: v for k, v in entry.items() if k != "parentUuid"}}


def dump_line(entry: dict[str, Any]) -> bytes:
    """`entry` as one compact JSON line ending in `\\n`."""
    entry = parent_first(entry)
    try:
        data = orjson.dumps(entry)
    except orjson.JSONEncodeError:  # a lone surrogate, more than 254 levels, an integer past 64 bits
        data = dumps_any_depth(entry)
    return data + b"\n"
