"""The one mapping from session-lsp's errors to JSON-RPC errors.

A wrong request (bad parameter, unknown session, a path outside the projects folder, a file that is
not a transcript, an unsafe sandbox) is InvalidParams (-32602); a correct request that cannot be done
now (the session is in use, too many turns, the model provider failed) is RequestFailed (-32803).
Every error carries `data.reason`, stable for clients to act on.
"""

from __future__ import annotations

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from storage.errors import Busy, InUse, SessionLspError, WriteFailed

FAILED = (InUse, Busy, WriteFailed)
"""Refusals of a request that was valid (RequestFailed): someone else holds the session, a bound was reached, the
system refused a write into the session's file."""


def to_jsonrpc(exc: SessionLspError) -> JsonRpcException:
    data = {"reason": exc.reason, **exc.details()}
    if isinstance(exc, FAILED) or exc.reason == "provider":
        return JsonRpcException(message=str(exc), code=lsp.LSPErrorCodes.RequestFailed.value, data=data)
    return JsonRpcInvalidParams(message=str(exc), data=data)
