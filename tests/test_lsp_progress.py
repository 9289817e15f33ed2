"""Indexing progress over the real server: begin, reports with files and bytes, end; and requests
answered while the first index is still being built (no handler blocks the event loop)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
import pytest_lsp
from conftest import CORPUS
from lsprotocol import types as lsp
from lspserver import SERVER, open_session
from pytest_lsp import LanguageClient

TOKEN = "session-lsp/indexing"


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    dest = tmp_path / "projects"
    shutil.copytree(CORPUS / "projects", dest)
    for n in range(60):  # enough files for several reports
        shutil.copytree(dest / "-Users-me-other", dest / f"-copy-{n}")
    return dest


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, projects: Path):  # type: ignore[no-untyped-def]
    await open_session(lsp_client, projects, watch=True)
    yield
    await lsp_client.shutdown_session()


async def test_indexing_reports_files_and_bytes(client: LanguageClient, projects: Path) -> None:
    # asked at once after `initialized`: answered, whether or not the index is done
    answer = await asyncio.wait_for(client.protocol.send_request_async("sessions/list", {}), timeout=30)
    assert answer is not None
    for _ in range(300):
        reports = client.progress_reports.get(TOKEN, [])
        if reports and isinstance(reports[-1], lsp.WorkDoneProgressEnd):
            break
        await asyncio.sleep(0.1)
    reports = client.progress_reports[TOKEN]
    assert isinstance(reports[0], lsp.WorkDoneProgressBegin) and isinstance(reports[-1], lsp.WorkDoneProgressEnd)
    middle = [r for r in reports if isinstance(r, lsp.WorkDoneProgressReport)]
    total = sum(1 for _ in projects.rglob("*.jsonl"))
    assert middle and middle[-1].message is not None
    assert middle[-1].message.startswith(f"{total}/{total} files, ")
    assert middle[-1].message.endswith(" MiB") and middle[-1].percentage == 100
    percentages = [r.percentage for r in middle]
    assert percentages == sorted(percentages)
