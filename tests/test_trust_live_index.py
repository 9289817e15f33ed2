"""The live index after discovery: a session it already tracks is swapped for a symlink leading out
of the projects folder (the file itself, or its project folder), and the watcher reports the path
changed. Discovery never follows such a link (`test_trust_paths`); an update must not either. Real
files and links; `update_file` is what the watcher calls for each changed path."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import CORPUS

from server.index import ProjectIndex

SHOP = "-Users-me-shop"
S1 = "11111111-1111-4111-8111-111111111111"
SECRET_UUID = "99999999-9999-4999-8999-999999999999"


@pytest.mark.parametrize("swapped", ["the session file", "its project folder"])
def test_a_tracked_session_swapped_for_a_link_out_is_not_read(tmp_path: Path, swapped: str) -> None:
    projects = tmp_path / "projects"
    shutil.copytree(CORPUS / "projects", projects)
    session = projects / SHOP / f"{S1}.jsonl"
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = (
        b'{"type":"user","sessionId":"%s","uuid":"%s","parentUuid":null,'
        b'"message":{"role":"user","content":"TOPSECRET"}}\n' % (S1.encode(), SECRET_UUID.encode())
    )
    (outside / session.name).write_bytes(session.read_bytes() + secret)
    index = ProjectIndex(projects, persist=False)
    index.scan()
    assert session in index.files and not index.find_uuid(SECRET_UUID)
    if swapped == "the session file":
        session.unlink()
        session.symlink_to(outside / session.name)
    else:
        (projects / SHOP).rename(tmp_path / "moved")
        (projects / SHOP).symlink_to(outside, target_is_directory=True)
    index.update_file(session)
    assert index.find_uuid(SECRET_UUID) == []
    assert session not in index.files
    assert "leading out" in index.skipped.get(session, ""), index.skipped
