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


@pytest.fixture(scope="session")
def pg_server():  # type: ignore[no-untyped-def]
    """A real PostgreSQL server for the session (tests/pg.py). Under CI a test that needs one
    fails when it cannot start; elsewhere it skips loudly."""
    import os

    from pg import start_server

    try:
        server = start_server()
    except Exception as exc:  # noqa: BLE001 - any reason is reported
        if os.environ.get("CI"):
            pytest.fail(f"POSTGRESQL NOT AVAILABLE under CI: {exc}")
        pytest.skip(f"POSTGRESQL NOT AVAILABLE: {exc}")
    yield server
    server.remove()


@pytest.fixture
def pg_schema(request: pytest.FixtureRequest) -> str:
    """A schema name of its own for one test (stores of one test share it)."""
    import re
    import uuid

    base = re.sub(r"[^a-z0-9_]", "_", request.node.name.lower())[:40]
    return f"t_{base}_{uuid.uuid4().hex[:8]}"
