"""Write server/lsp/capabilities.json: the capabilities pygls builds for this server's registered features, which
`server.lsp.firstanswer` answers a first `initialize` with before pygls is imported; and
server/lsp/requestparams.json: lsprotocol's params of the requests answered before pygls loads (`initialize`,
`workspace/diagnostic`) down to the last field, which `server.lsp.paramshape` checks them against. Run it after
adding, removing or changing a feature, or upgrading lsprotocol (tests/test_lsp_first_initialize.py fails until
then): `.venv/bin/python scripts/make_capabilities.py`.
"""

from __future__ import annotations

import collections.abc
import enum
import json
import sys
import typing
from pathlib import Path
from typing import Any

import attrs

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from lsprotocol import types as lsp  # noqa: E402
from pygls.capabilities import ServerCapabilitiesBuilder  # noqa: E402

from server.lsp.firstanswer import TEMPLATE  # noqa: E402
from server.lsp.paramshape import SCHEMA  # noqa: E402
from server.lsp.server import server  # noqa: E402

CLIENT_DEPENDENT = (
    lsp.TEXT_DOCUMENT_WILL_SAVE,
    lsp.TEXT_DOCUMENT_WILL_SAVE_WAIT_UNTIL,
    lsp.TEXT_DOCUMENT_RENAME,
    lsp.WORKSPACE_WILL_CREATE_FILES,
    lsp.WORKSPACE_DID_CREATE_FILES,
    lsp.WORKSPACE_WILL_DELETE_FILES,
    lsp.WORKSPACE_DID_DELETE_FILES,
    lsp.WORKSPACE_WILL_RENAME_FILES,
    lsp.WORKSPACE_DID_RENAME_FILES,
)
"""Features whose capabilities pygls builds from the client's in ways `server.lsp.firstanswer` does not follow."""


def main() -> None:
    protocol = server.protocol
    features = protocol.fm
    registered = set(features.features) & set(CLIENT_DEPENDENT)
    if registered or server._notebook_document_sync is not None:
        sys.exit(f"server.lsp.firstanswer does not know how the client changes these: {sorted(registered)}")
    built = ServerCapabilitiesBuilder(
        lsp.ClientCapabilities(),
        set({**features.features, **features.builtin_features}.keys()),
        features.feature_options,
        list(features.commands.keys()),
        server._text_document_sync_kind,
        server._notebook_document_sync,
        lsp.PositionEncodingKind.Utf16,
    ).build()
    answer = protocol._converter.unstructure(lsp.InitializeResult(capabilities=built, server_info=protocol.server_info))
    answer["capabilities"].pop("positionEncoding", None)  # the client's choice
    answer["serverInfo"].pop("version", None)  # the installed one
    TEMPLATE.write_text(json.dumps(answer, indent=1) + "\n")
    print(f"wrote {TEMPLATE.relative_to(REPO)}")
    SCHEMA.write_text(json.dumps(request_params_schema(), sort_keys=True, separators=(",", ":")) + "\n")
    print(f"wrote {SCHEMA.relative_to(REPO)}")


def request_params_schema() -> dict[str, Any]:
    """The params of the requests answered before pygls loads, as `server.lsp.paramshape` reads them: each
    request's root type and every class below them."""
    classes: dict[str, Any] = {}
    roots = {
        lsp.INITIALIZE: _type(lsp.InitializeParams, None, classes),
        lsp.WORKSPACE_DIAGNOSTIC: _type(lsp.WorkspaceDiagnosticParams, None, classes),
    }
    return {"roots": roots, "classes": classes}


def _json_name(name: str) -> str:
    """A field's JSON name, as lsprotocol's converter renames it."""
    parts = name.removesuffix("_").split("_")
    return parts[0] + "".join(p.title() for p in parts[1:])


def _type(t: Any, validator: Any, classes: dict[str, Any]) -> Any:
    origin, args = typing.get_origin(t), typing.get_args(t)
    simple = {type(None): "null", bool: "bool", str: "str", float: "number"}
    if t is typing.Any:
        return "any"
    if t in simple:
        return simple[t]
    if t is int:
        return "uint" if "uinteger_validator" in repr(validator) else "int"
    if origin is typing.Union:
        alternatives = [_type(a, validator, classes) for a in args]
        return "any" if "any" in alternatives else {"union": alternatives}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if isinstance(t, type) and issubclass(t, enum.Enum):
        return {"enum": [e.value for e in t]}
    if origin in (list, tuple, collections.abc.Sequence):
        return {"list": _type(args[0], None, classes)}
    if origin in (dict, collections.abc.Mapping):
        return {"map": _type(args[1], None, classes)}
    if attrs.has(t):
        name = t.__name__
        if name not in classes:
            classes[name] = {}
            hints = typing.get_type_hints(t, vars(lsp))
            classes[name] = {
                _json_name(a.name): [a.default is attrs.NOTHING, _type(hints[a.name], a.validator, classes)]
                for a in attrs.fields(t)
            }
        return {"class": name}
    sys.exit(f"no description for the type {t!r}")


if __name__ == "__main__":
    main()
