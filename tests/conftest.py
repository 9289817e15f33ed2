"""Shared fixtures: copies of the real CLI corpus that tests may damage freely."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
CORPUS = TESTS / "corpus" / "claude-code-2.1.328"
sys.path.insert(0, str(TESTS))


@pytest.fixture
def corpus_projects(tmp_path: Path) -> Path:
    """A writable copy of the shared corpus's projects folder."""
    dest = tmp_path / "projects"
    shutil.copytree(CORPUS / "projects", dest)
    for p in dest.rglob("*"):
        p.chmod(0o700 if p.is_dir() else 0o600)
    return dest
