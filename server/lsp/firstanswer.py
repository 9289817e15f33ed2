"""The answer to an `initialize` no earlier launch has answered, given before pygls and lsprotocol are imported.

pygls builds a server's capabilities from the features the server registers, and from two things the client
sends that this server's features depend on: the position encoding (the first of the client's
`general.positionEncodings` that pygls supports, UTF-16 when none is), and whether the client stated
`willSave` and `willSaveWaitUntil` (each is then answered `false`, as this server registers neither). So the
answer is the capabilities pygls builds for this server (`capabilities.json`, written by
`scripts/make_capabilities.py`, which refuses features whose capabilities depend on the client in other ways;
the tests check it against pygls's own answer to the capabilities of real editors) with those and the installed
version.
A request whose params do not fit lsprotocol's `InitializeParams` strictly (`server.lsp.paramshape`), which pygls
might refuse, gets no answer from here (pygls answers it).
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

from server.lsp.paramshape import conforms

TEMPLATE = Path(__file__).with_name("capabilities.json")
ENCODINGS = ("utf-8", "utf-16", "utf-32")
"""The position encodings pygls supports; it prefers the client's order, and UTF-16 when there is no overlap."""
DEFAULT_ENCODING = "utf-16"
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
    if template is None or not isinstance(capabilities, dict) or not conforms("initialize", params):
        return None
    result = copy.deepcopy(template)
    result["capabilities"] = {"positionEncoding": position_encoding(capabilities), **result["capabilities"]}
    stated = _synchronization(capabilities)
    result["capabilities"]["textDocumentSync"].update({k: False for k in _SAVE_FIELDS if stated.get(k) is not None})
    from server.version import version  # importlib.metadata: only for an answer never given before

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
