"""The version of session-lsp, from the installed package's metadata (pyproject.toml is the one source)."""

from __future__ import annotations

from functools import cache
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version

DIST_NAME = "session-lsp"


@cache
def version() -> str:
    """The installed distribution's version; "0+unknown" when running from a tree that was never installed."""
    try:
        return package_version(DIST_NAME)
    except PackageNotFoundError:
        return "0+unknown"
