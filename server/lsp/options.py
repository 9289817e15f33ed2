"""The server's `initializationOptions`, parsed once into a typed object."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from server.index.storesource import StoreSource, parse_stores
from storage.errors import InvalidArgument


@dataclass(frozen=True)
class InitializationOptions:
    projects_dir: Path | None = None
    """`projectsDir`: the projects folder to serve (default: the command line's, else the CLI's)."""
    watch: bool = True
    """`watch`: follow changes to the folder live."""
    polling: bool = False
    """`polling`: poll instead of OS events (network drives)."""
    stores: tuple[StoreSource, ...] = ()
    """`stores`: session stores (postgresql:// URLs, or `{url, schema}`) mirrored read-only beside the folder."""

    @classmethod
    def parse(cls, raw: Any, *, defaults: InitializationOptions | None = None) -> InitializationOptions:
        """From the client's JSON (None or an object); a wrong option raises `InvalidArgument` naming it."""
        base = defaults or cls()
        if raw is None:
            return base
        if not isinstance(raw, dict):
            raise InvalidArgument("initializationOptions must be an object")
        projects = raw.get("projectsDir")
        if projects is not None and (not isinstance(projects, str) or not projects or "\x00" in projects):
            raise InvalidArgument("initialization option 'projectsDir' must be a non-empty path string")
        for name in ("watch", "polling"):
            if name in raw and not isinstance(raw[name], bool):
                raise InvalidArgument(f"initialization option {name!r} must be true or false")
        return cls(
            projects_dir=Path(projects).expanduser() if projects else base.projects_dir,
            watch=raw.get("watch", base.watch),
            polling=raw.get("polling", base.polling),
            stores=parse_stores(raw["stores"]) if raw.get("stores") is not None else base.stores,
        )
