"""A projects folder whose own path is not valid UTF-8 (`--projects-dir`, or `$CLAUDE_CONFIG_DIR` under a home
folder named in Latin-1): every path below it comes into Python with a lone surrogate, which the caches (SQLite,
orjson) cannot carry. `list`, `usage` and `search` died with a traceback (status 1) and `overview` failed with
"str is not valid UTF-8"; `storage.paths.decodable` left out only names below the folder. The real CLI (Node) reads
such a path with U+FFFD in it, so it has no session there: the command line now refuses the folder in one line.

Real `session-lsp` processes on real files."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import CORPUS
from turnproc import session_lsp

OTHER = "1c99f271-c426-49f7-9ae1-2b8728ab22c4"


def _bad_config(tmp_path: Path) -> Path:
    """A config folder named with the byte 0xff, holding a copy of the corpus's projects folder."""
    config = Path(os.fsdecode(os.path.join(os.fsencode(tmp_path), b"conf\xffig")))
    shutil.copytree(CORPUS / "projects", config / "projects")
    return config


COMMANDS = [
    ("list",),
    ("list", "--json"),
    ("overview",),
    ("usage",),
    ("search", "hello"),
    ("chain", OTHER),
]


@pytest.mark.parametrize("given", ["--projects-dir", "CLAUDE_CONFIG_DIR"])
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
def test_a_projects_folder_not_valid_utf8_is_refused_in_one_line(
    tmp_path: Path, given: str, command: tuple[str, ...]
) -> None:
    config = _bad_config(tmp_path)
    args = [*command, "--projects-dir", str(config / "projects")] if given == "--projects-dir" else [*command]
    done = session_lsp(*args, config=config if given == "CLAUDE_CONFIG_DIR" else tmp_path)
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr and "surrogates" not in done.stderr, done.stderr[-2000:]
    assert done.stderr.splitlines() == [
        f"session-lsp: projects folder {tmp_path}/conf⟨U+DCFF⟩ig/projects is not valid UTF-8: the CLI has no session there"
    ]
    assert done.stdout == ""
