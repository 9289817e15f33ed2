"""Whether a request's params have the shape lsprotocol gives them, checked without importing lsprotocol: for the
requests answered before pygls loads (`initialize`, and `workspace/diagnostic` from a kept answer).

`requestparams.json` (written by `scripts/make_capabilities.py` from lsprotocol's classes) names every field of
their params down to the last capability: its JSON name, whether it is required, and its type. The check is
strict (a boolean is `true` or `false`, an integer an in-range JSON integer, an enumeration one of its values), so
params that pass are params pygls takes; fields lsprotocol does not know are ignored, as pygls ignores them
(tests/test_lsp_first_initialize.py compares with pygls over real editors' params with odd values put in).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

SCHEMA = Path(__file__).with_name("requestparams.json")
INT_RANGE = (-(2**31), 2**31 - 1)
UINT_RANGE = (0, 2**31 - 1)


@cache
def _schema() -> dict[str, Any] | None:
    try:
        loaded = json.loads(SCHEMA.read_bytes())
    except (OSError, ValueError):
        return None
    return loaded if isinstance(loaded, dict) and isinstance(loaded.get("classes"), dict) else None


def conforms(method: str, params: Any) -> bool:
    """True when `params` fits the params of `method` strictly (False too for a method not described, or when the
    description cannot be read)."""
    schema = _schema()
    if schema is None or method not in schema.get("roots", {}):
        return False
    try:
        return _fits(params, schema["roots"][method], schema["classes"])
    except (RecursionError, KeyError, TypeError, ValueError):  # a damaged description: pygls decides
        return False


def _fits(value: Any, node: Any, classes: dict[str, Any]) -> bool:
    if isinstance(node, str):
        return _fits_simple(value, node)
    if "class" in node:
        return isinstance(value, dict | list | str) and _fits_class(value, classes[node["class"]], classes)
    if "union" in node:
        return any(_fits(value, alt, classes) for alt in node["union"])
    if "enum" in node:
        return any(type(value) is type(v) and value == v for v in node["enum"])
    if "list" in node:
        return isinstance(value, list) and all(_fits(v, node["list"], classes) for v in value)
    if "map" in node:
        return isinstance(value, dict) and all(_fits(v, node["map"], classes) for v in value.values())
    raise ValueError(f"unknown type description {node!r}")


def _fits_simple(value: Any, kind: str) -> bool:
    if kind == "any":
        return True
    if kind == "null":
        return value is None
    if kind == "bool":
        return type(value) is bool
    if kind == "str":
        return type(value) is str
    if kind == "number":
        return type(value) in (int, float)
    if kind in ("int", "uint"):
        low, high = INT_RANGE if kind == "int" else UINT_RANGE
        return type(value) is int and low <= value <= high
    raise ValueError(f"unknown type {kind!r}")


def _fits_class(value: dict[str, Any] | list[Any] | str, fields: dict[str, Any], classes: dict[str, Any]) -> bool:
    """pygls takes an object's fields with `name in value`, so a list or a string where an object goes is taken as
    an empty object (Neovim 0.9 sends `callHierarchy: [...]`) as long as no field name is in it."""
    for name, (required, node) in fields.items():
        if name not in value:
            if required:
                return False
        elif not isinstance(value, dict) or not _fits(value[name], node, classes):
            return False
    return True
