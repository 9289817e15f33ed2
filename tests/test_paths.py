"""Project folder naming and session file discovery."""

from __future__ import annotations

from pathlib import Path

from storage.paths import (
    base36,
    candidate_project_dirs,
    config_home,
    djb2_utf16,
    is_session_file,
    project_folder_name,
    subagent_files,
)


def test_folder_names() -> None:
    assert project_folder_name("/Users/me/my_shop") == "-Users-me-my-shop"
    assert project_folder_name("/Users/me/shop") == "-Users-me-shop"
    assert project_folder_name("/x/项目") == "-x---"
    # an astral character is two UTF-16 units, so two dashes
    assert project_folder_name("/a/😀") == "-a---"
    assert project_folder_name("/a/.b-c") == "-a--b-c"


def test_djb2_signed_32_bit() -> None:
    assert djb2_utf16("") == 0
    assert djb2_utf16("a") == 97
    assert djb2_utf16("ab") == 97 * 31 + 98
    long = "x" * 50
    h = 0
    for ch in long:
        h = (h * 31 + ord(ch)) & 0xFFFFFFFF
    assert djb2_utf16(long) == (h - 2**32 if h >= 2**31 else h)


def test_long_path_gets_hash_suffix() -> None:
    cwd = "/tmp/" + "d" * 300
    name = project_folder_name(cwd)
    assert name.startswith(("-tmp-" + "d" * 300)[:200])
    assert name == name[:200] + "-" + base36(abs(djb2_utf16(cwd)))
    assert len(name) > 200


def test_long_path_any_suffix_accepted(tmp_path: Path) -> None:
    cwd = "/tmp/" + "e" * 300
    name = project_folder_name(cwd)
    other = tmp_path / (name[:200] + "-oldhash")
    other.mkdir()
    assert candidate_project_dirs(tmp_path, cwd) == [other]


def test_session_file_names(tmp_path: Path) -> None:
    assert is_session_file(Path("11111111-1111-4111-8111-111111111111.jsonl"))
    assert not is_session_file(Path("agent-a1b2.jsonl"))
    assert not is_session_file(Path("history.jsonl"))


def test_config_home(monkeypatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))
    assert config_home() == tmp_path
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert config_home() == tmp_path / ".claude"


def test_subagent_files(corpus_projects: Path) -> None:
    session = corpus_projects / "-Users-me-shop/22222222-2222-4222-8222-222222222222.jsonl"
    subs = subagent_files(session)
    assert [s.agent_id for s in subs] == ["a88b3ce23b875db07"]
    assert subs[0].meta_path is not None
