"""Write server/lsp/capabilities.json: the capabilities pygls builds for this server's registered features, which
`server.lsp.firstanswer` answers a first `initialize` with before pygls is imported. Run it after adding,
removing or changing a feature (tests/test_lsp_first_initialize.py fails until then):
`.venv/bin/python scripts/make_capabilities.py`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from lsprotocol import types as lsp  # noqa: E402
from pygls.capabilities import ServerCapabilitiesBuilder  # noqa: E402

from server.lsp.firstanswer import TEMPLATE  # noqa: E402
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


if __name__ == "__main__":
    main()
