"""One transcript line as the CLI writes it (compact JSON, raw UTF-8, `parentUuid` first, no lone
surrogates, `\\n`-terminated) and as the CLI reads it (`loads_line`: lone surrogate escapes and
invalid UTF-8 bytes become U+FFFD, as a JavaScript reader turns them)."""

from __future__ import annotations

import json
from typing import Any

import orjson

BOM = b"\xef\xbb\xbf"
"""The UTF-8 byte order mark, skipped at the start of a file as the CLI skips it."""
LONE_SURROGATE = "a lone surrogate escape (a string cut mid-character), read as U+FFFD"
INVALID_UTF8 = "invalid UTF-8 bytes, read as U+FFFD"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads_line(raw: bytes) -> tuple[Any, str | None]:
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
    text = raw.decode("utf-8", "replace")
    notes = []
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        notes.append(INVALID_UTF8)
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError as exc:
        raise ValueError("nested too deeply") from exc
    scrubbed = scrub_surrogates(value)
    if scrubbed != value:
        notes.append(LONE_SURROGATE)
    return scrubbed, "; ".join(notes) or None


def scrub_surrogates(value: Any) -> Any:
    """Pair up surrogate halves into real characters and replace lone ones with U+FFFD."""
    if isinstance(value, str):
        if any("\ud800" <= ch <= "\udfff" for ch in value):
            return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        return value
    if isinstance(value, dict):
        return {scrub_surrogates(k): scrub_surrogates(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub_surrogates(v) for v in value]
    return value


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
    except orjson.JSONEncodeError:
        data = orjson.dumps(scrub_surrogates(entry))
    return data + b"\n"
