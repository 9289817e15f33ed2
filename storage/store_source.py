"""A session store the server mirrors: its URL, schema, a stable short id and a name safe to show.

Given as `serve --store URL` or in `initializationOptions.stores`, each either a `postgresql://` URL or
`{"url": ..., "schema": ...}`. The id names the store in `session-store:` URIs and in the mirror's
folder; the name is the URL without its password, for the tree and for messages.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from storage.errors import InvalidArgument
from storage.schemaname import DEFAULT_SCHEMA, check_schema

SCHEMES = ("postgresql://", "postgres://")


def _is_password(key: str) -> bool:
    return key.strip().lower() == "password"


def has_password(url: str) -> bool:
    """The URL carries a password: in its user part, or as libpq's `password` parameter."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.password is not None or any(_is_password(k) for k, _ in parse_qsl(parts.query, keep_blank_values=True))


def redact(url: str) -> str:
    """The URL with any password (its user part's, libpq's `password` parameter) replaced by `***` (never shown,
    never logged)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url.split("://", 1)[0] + "://…"
    if parts.password is not None:
        user = parts.username or ""
        host = parts.netloc.rsplit("@", 1)[1]
        parts = parts._replace(netloc=f"{user}:***@{host}")
    if parts.query:
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        if any(_is_password(k) for k, _ in pairs):
            shown = "&".join(f"{k}=***" if _is_password(k) else f"{k}={v}" for k, v in pairs)
            parts = parts._replace(query=shown)
    return urlunsplit(parts)


@dataclass(frozen=True)
class StoreSource:
    url: str
    schema: str = DEFAULT_SCHEMA

    @property
    def id(self) -> str:
        """12 hex digits of a hash of URL and schema: stable across runs, and reveals neither."""
        return hashlib.sha256(f"{self.url}\x00{self.schema}".encode()).hexdigest()[:12]

    @property
    def name(self) -> str:
        shown = redact(self.url)
        return shown if self.schema == DEFAULT_SCHEMA else f"{shown} ({self.schema})"


def _url(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.startswith(SCHEMES) or "\x00" in value:
        shown = value.split("://", 1)[0] + "://…" if isinstance(value, str) and "://" in value else repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise InvalidArgument(f"{where} must be a postgresql:// URL, not {shown}")
    try:
        urlsplit(value).port  # noqa: B018 - raises on a port that is not a number
    except ValueError as exc:
        raise InvalidArgument(f"{where} is not a valid URL ({redact(value)}): {exc}") from exc
    return value


def parse_store(value: Any, where: str) -> StoreSource:
    """One store: a URL string, or an object `{url, schema?}`; else `InvalidArgument` naming `where`."""
    if isinstance(value, dict):
        unknown = set(value) - {"url", "schema"}
        if unknown:
            raise InvalidArgument(f"{where} has unknown keys {sorted(unknown)}: give url and schema")
        schema = check_schema(value.get("schema", DEFAULT_SCHEMA), f"{where}.schema")
        return StoreSource(_url(value.get("url"), f"{where}.url"), schema)
    return StoreSource(_url(value, where))


def parse_stores(raw: Any, option: str = "stores") -> tuple[StoreSource, ...]:
    """The `stores` option: a list of stores, each given once."""
    if not isinstance(raw, list):
        raise InvalidArgument(f"initialization option {option!r} must be a list of postgresql:// URLs")
    sources = tuple(parse_store(v, f"initialization option {option!r}[{i}]") for i, v in enumerate(raw))
    if len({s.id for s in sources}) != len(sources):
        raise InvalidArgument(f"initialization option {option!r} names a store twice")
    return sources
