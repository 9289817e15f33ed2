"""A store session is written into a projects folder only if every file's temporary name (`.<name>.tmp`,
`storage.wholefile`) can be created too: a name of 251 to 255 bytes fits a file but not its temporary name, and is
refused before anything is written, not after the session's other files."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.errors import InvalidArgument
from storage.store_materialize import NAME_MAX, StoreSession, write_session
from storage.wholefile import temp_name

SESSION = "0d0d0d0d-0000-4000-8000-000000000001"


def entry(uuid: str) -> dict[str, object]:
    return {"type": "user", "parentUuid": None, "uuid": uuid, "sessionId": SESSION, "message": {"content": "hi"}}


def session_with_agent_file_of(length: int) -> StoreSession:
    """A session with one subagent file whose name is `length` bytes."""
    agent = "agent-" + "a" * (length - len("agent-.jsonl"))
    sub = [entry("0d0d0d0d-0000-4000-8000-0000000000aa")]
    return StoreSession("-tmp-p", SESSION, [entry("0d0d0d0d-0000-4000-8000-0000000000ff")], {f"subagents/{agent}": sub})


def files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if not p.is_dir())


@pytest.mark.parametrize("length", [NAME_MAX - 4, NAME_MAX])
def test_a_name_whose_temporary_name_is_too_long_is_refused_before_anything_is_written(
    tmp_path: Path, length: int
) -> None:
    session = session_with_agent_file_of(length)
    with pytest.raises(InvalidArgument, match=f"longer than {NAME_MAX} bytes"):
        write_session(tmp_path / "projects", session)
    assert files_under(tmp_path) == []


def test_the_longest_name_whose_temporary_name_fits_is_written_whole(tmp_path: Path) -> None:
    length = NAME_MAX - len(temp_name(""))
    written = write_session(tmp_path / "projects", session_with_agent_file_of(length))
    names = files_under(tmp_path / "projects")
    assert len(names) == 2 and str(written.relative_to(tmp_path / "projects")) in names
    assert [len(Path(n).name.encode()) for n in names if "subagents" in n] == [length]
    assert not [n for n in names if n.endswith(".tmp")]
