"""One transcript line as the CLI writes it: compact JSON, raw UTF-8, `parentUuid` first, no lone
surrogates, `\\n`-terminated."""

from __future__ import annotations

from typing import Any

import orjson


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
