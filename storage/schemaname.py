"""The name of a session store's PostgreSQL schema: the default, and the one rule a name must follow.

A name is put into SQL statements as it is, so it must be a plain lower-case identifier. Light (no dataclasses,
no driver): `serve` checks `--store-schema` with it before it answers its first requests.
"""

from __future__ import annotations

import re
from typing import Any

from storage.errors import InvalidArgument

DEFAULT_SCHEMA = "session_store"
_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def check_schema(value: Any, where: str) -> str:
    """`value` if it is a schema name; else `InvalidArgument` naming `where` (the option that gave it)."""
    if not isinstance(value, str) or not _NAME.match(value):
        raise InvalidArgument(f"{where} must be a lower-case SQL name (letters, digits, _, at most 63), not {value!r}")
    return value
