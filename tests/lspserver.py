"""The real session-lsp server over stdio for pytest-lsp fixtures: one launch config, one way to open
a session on a projects folder."""

from __future__ import annotations

import sys
from pathlib import Path

from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "server.cli", "serve", "--stdio"])


async def open_session(
    lsp_client: LanguageClient, projects: Path, *, watch: bool = False, editor: str = "visual-studio-code"
) -> None:
    """`initialize` (as `editor` would) the server on `projects`, then `initialized`."""
    await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=client_capabilities(editor),
            initialization_options={"projectsDir": str(projects), "watch": watch},
        )
    )
