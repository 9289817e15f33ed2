"""The answer to an `initialize` no earlier launch has answered, given before pygls and lsprotocol are imported.

pygls builds a server's capabilities from the features the server registers, and from two things the client
sends that this server's features depend on: the position encoding (the first of the client's
`general.positionEncodings` that pygls supports, UTF-16 when none is), and whether the client stated
`willSave` and `willSaveWaitUntil` (each is then answered `false`, as this server registers neither). So the
answer is the capabilities pygls builds for this server (`capabilities.json`, written by
`scripts/make_capabilities.py`, which refuses features whose capabilities depend on the client in other ways;
the tests check it against pygls's own answer to the capabilities of real editors) with those and the installed
version.
A request whose shape pygls might refuse gets no answer from here (pygls answers it).
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

from server.version import version

TEMPLATE = Path(__file__).with_name("capabilities.json")
ENCODINGS = ("utf-8", "utf-16", "utf-32")
"""The position encodings pygls supports; it prefers the client's order, and UTF-16 when there is no overlap."""
DEFAULT_ENCODING = "utf-16"
_TEXT_FIELDS = ("rootUri", "rootPath", "locale")
TRACE_VALUES = ("off", "messages", "verbose")
"""The values of `trace` pygls takes (lsprotocol's `TraceValue`); it refuses an `initialize` with any other."""
_SAVE_FIELDS = ("willSave", "willSaveWaitUntil")


@cache
def _template() -> dict[str, Any] | None:
    try:
        loaded = json.loads(TEMPLATE.read_bytes())
    except (OSError, ValueError):
        return None
    return loaded if isinstance(loaded, dict) and isinstance(loaded.get("capabilities"), dict) else None


def first_answer(params: dict[str, Any]) -> dict[str, Any] | None:
    """pygls's answer to this `initialize` (None: one of its fields has a shape pygls might refuse)."""
    template = _template()
    capabilities = params.get("capabilities")
    if template is None or not isinstance(capabilities, dict) or not _plain(params, capabilities):
        return None
    result = copy.deepcopy(template)
    result["capabilities"] = {"positionEncoding": position_encoding(capabilities), **result["capabilities"]}
    stated = _synchronization(capabilities)
    result["capabilities"]["textDocumentSync"].update({k: False for k in _SAVE_FIELDS if stated.get(k) is not None})
    result["serverInfo"] = {**result.get("serverInfo", {}), "version": version()}
    return result


def position_encoding(capabilities: dict[str, Any]) -> str:
    general = capabilities.get("general")
    offered = general.get("positionEncodings") if isinstance(general, dict) else None
    return next((e for e in offered or () if e in ENCODINGS), DEFAULT_ENCODING)


def _synchronization(capabilities: dict[str, Any]) -> dict[str, Any]:
    document = capabilities.get("textDocument")
    found = document.get("synchronization") if isinstance(document, dict) else None
    return found if isinstance(found, dict) else {}


def _plain(params: dict[str, Any], capabilities: dict[str, Any]) -> bool:
    """Every field pygls reads has the JSON type LSP gives it (deeper capabilities are the client's to get right)."""
    if any(params.get(name) is not None and not isinstance(params[name], str) for name in _TEXT_FIELDS):
        return False
    if params.get("trace") is not None and params["trace"] not in TRACE_VALUES:
        return False
    folders = params.get("workspaceFolders")
    if folders is not None and not (isinstance(folders, list) and all(_folder(f) for f in folders)):
        return False
    client = params.get("clientInfo")
    if client is not None and not (isinstance(client, dict) and isinstance(client.get("name"), str)):
        return False
    if any(v is not None and not isinstance(v, dict) for k, v in capabilities.items() if k != "experimental"):
        return False
    document = capabilities.get("textDocument") or {}
    if not isinstance(document.get("synchronization") or {}, dict):
        return False
    if any(not isinstance(_synchronization(capabilities).get(k), bool | None) for k in _SAVE_FIELDS):
        return False
    general = capabilities.get("general") or {}
    offered = general.get("positionEncodings")
    return offered is None or (isinstance(offered, list) and all(isinstance(e, str) for e in offered))


def _folder(folder: Any) -> bool:
    return isinstance(folder, dict) and isinstance(folder.get("uri"), str) and isinstance(folder.get("name"), str)
