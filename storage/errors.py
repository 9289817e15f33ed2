"""The one error hierarchy of session-lsp.

Every error a person can cause (a wrong id, a path outside the projects folder, a session another
process is writing) is a `SessionLspError` subclass with a stable `reason`. The language server maps
them to JSON-RPC errors in one place (`server.lsp.errors`), the command line to exit statuses in one
place (`server.commands.common`).
"""

from __future__ import annotations

from typing import Any, ClassVar


class SessionLspError(Exception):
    """Base of every error meant for the person; the message says what went wrong."""

    reason: ClassVar[str] = "error"
    """Stable machine-readable kind, sent as `data.reason` in JSON-RPC errors."""

    def details(self) -> dict[str, Any]:
        """Extra data for a JSON-RPC error (beside `reason`)."""
        return {}


class InvalidArgument(SessionLspError, ValueError):
    """A parameter or argument is malformed; the message names it."""

    reason = "invalid-argument"


class NotFound(SessionLspError):
    """No such session, message or folder."""

    reason = "not-found"


class OutsideProjects(SessionLspError):
    """A path whose real location (symlinks resolved) is outside the projects folder."""

    reason = "outside-projects"


class NotATranscript(SessionLspError):
    """A file that is not a Claude Code transcript (or not a regular file at all)."""

    reason = "not-a-transcript"


class InUse(SessionLspError):
    """Another writer (the real CLI or another session-lsp process or turn) holds the session."""

    reason = "in-use"

    def __init__(self, message: str, holder: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.holder = holder or {}

    def details(self) -> dict[str, Any]:
        return {"holder": self.holder} if self.holder else {}


class WriteFailed(SessionLspError, OSError):
    """The system refused a write of ours (a read-only or immutable file or folder, a full disk, an I/O error);
    still an `OSError` with the refusal's errno. The message names the path and what was not written."""

    reason = "write-failed"

    def __init__(self, exc: OSError, path: object, message: str) -> None:
        OSError.__init__(self, exc.errno, exc.strerror, str(path))
        self.message = message

    def __str__(self) -> str:
        return self.message


class Busy(SessionLspError):
    """A bound was reached (too many turns at once); try again later."""

    reason = "busy"


class Unsafe(SessionLspError):
    """A request that would act outside what is safe without an explicit choice (e.g. a sandbox of `/`)."""

    reason = "unsafe"


class ForkError(SessionLspError):
    """The source cannot be forked as asked (no conversation, unknown message...)."""

    reason = "cannot-fork"


class StoreError(SessionLspError):
    """A session store call that could not be carried out; nothing was written."""

    reason = "store"


class StoreUnavailable(StoreError):
    """The database cannot be reached (or stopped answering) within the connect timeout."""

    reason = "store-unavailable"


class StoreSchemaError(StoreError):
    """The store's schema cannot be used by this version (too new, or not created and read-only)."""

    reason = "store-schema"


class StoreDiverged(StoreError):
    """A local copy of a store session and the store hold different rows after a common start."""

    reason = "store-diverged"
