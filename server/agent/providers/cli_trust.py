"""Whether the real CLI may load a working directory's own settings: only where Claude Code trusts the folder.

A folder's `.claude/settings.json` and `.claude/settings.local.json` come with the folder (a cloned repository,
an unpacked archive, the recorded cwd of a session pulled from a store): their hooks run commands as the session
starts and at every prompt, their `env` can point the CLI's API traffic, with your key, at any server, and they
enable the folder's MCP servers. The interactive CLI loads them only once you accepted its trust dialog for the
folder; `claude -p` skips that dialog ("only use this in directories you trust"), so the `claude-cli` provider
gives `--setting-sources user` for a folder Claude Code has not trusted, as the official VS Code extension does:
your own settings apply, the folder's do not. Trusted is what the CLI records in its `.claude.json`
(`$CLAUDE_CONFIG_DIR/.claude.json`, else `~/.claude.json`): `projects[<folder>].hasTrustDialogAccepted` for the
folder or a folder above it, the folder being the real path of the working directory.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from storage.fileopen import read_small

MAX_CONFIG_BYTES = 64 * 1024 * 1024
"""A `.claude.json` larger than this is not read (the folder is then untrusted)."""
UNTRUSTED_ARGS = ("--setting-sources", "user")


def global_config(env: Mapping[str, str]) -> Path | None:
    """The CLI's `.claude.json` for the environment it runs in."""
    folder = env.get("CLAUDE_CONFIG_DIR")
    if folder:
        return Path(folder) / ".claude.json"
    home = env.get("HOME")
    return Path(home) / ".claude.json" if home else None


def _projects(path: Path) -> dict[str, Any]:
    """The `projects` table of the CLI's config file; empty when it is missing, not a regular file, too large or
    not JSON (`storage.fileopen.read_small`: a FIFO planted there is never waited on)."""
    raw = read_small(path, MAX_CONFIG_BYTES, follow_links=True)
    try:
        data = json.loads(raw) if raw is not None else None
    except (ValueError, RecursionError):
        return {}
    projects = data.get("projects") if isinstance(data, dict) else None
    return projects if isinstance(projects, dict) else {}


def _folders_up(cwd: str) -> list[str]:
    """`cwd`'s real path and every folder above it: the CLI runs in the real folder (a working directory is always
    one) and loads that folder's settings, so a name through a link inside a trusted folder trusts nothing."""
    out: list[str] = []
    folder = os.path.realpath(cwd)
    while True:
        out.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            return out
        folder = parent


def workspace_trusted(cwd: str, env: Mapping[str, str]) -> bool:
    """Whether Claude Code has trusted `cwd` (or a folder above it) in the config the CLI will read."""
    path = global_config(env)
    projects = _projects(path) if path is not None else {}
    for folder in _folders_up(cwd):
        entry = projects.get(folder)
        if isinstance(entry, dict) and entry.get("hasTrustDialogAccepted") is True:
            return True
    return False


def setting_source_args(cwd: str, env: Mapping[str, str]) -> list[str]:
    """The CLI's arguments for `cwd`'s own settings: none where it is trusted, else `--setting-sources user`."""
    return [] if workspace_trusted(cwd, env) else list(UNTRUSTED_ARGS)
