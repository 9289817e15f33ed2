"""Reading request parameters: each wrong one raises `InvalidArgument` naming the field (the server
answers it as JSON-RPC InvalidParams)."""

from __future__ import annotations

from typing import Any

from storage.errors import InvalidArgument


def str_param(params: dict[str, Any], name: str, *, required: bool = False) -> str | None:
    """A non-empty string parameter without NUL characters (None when absent and optional)."""
    value = params.get(name)
    if value is None:
        if required:
            raise InvalidArgument(f"missing parameter {name!r}")
        return None
    if not isinstance(value, str) or not value:
        raise InvalidArgument(f"parameter {name!r} must be a non-empty string")
    if "\x00" in value:
        raise InvalidArgument(f"parameter {name!r} contains a NUL character")
    return value


def bool_param(params: dict[str, Any], name: str, default: bool = False) -> bool:
    value = params.get(name, default)
    if not isinstance(value, bool):
        raise InvalidArgument(f"parameter {name!r} must be true or false")
    return value
