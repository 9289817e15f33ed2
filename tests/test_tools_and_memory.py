"""Tools (confinement, errors, parallel batches), CLAUDE.md memory order and imports, the CLI command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from server.agent.memory import import_paths, load_memory, render_memory
from server.agent.providers.base import ProviderError
from server.agent.providers.choose import default_provider_name
from server.agent.tools import ToolContext, make_tools
from server.agent.tools.runner import ToolCall, batches, run_calls
from server.cli import main


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("import os\nprint('hi')\n")
    (tmp_path / "README.md").write_text("# readme\n")
    return tmp_path


def test_read_only_by_default_and_confined(root: Path) -> None:
    tools = make_tools()
    assert list(tools) == ["Read", "Glob", "Grep", "LS"]
    assert "Bash" in make_tools(["bash"]) and len(make_tools(["all"])) == 7
    ctx = ToolContext(root)
    calls = [
        ToolCall("1", "Read", {"file_path": "/etc/hostname"}),
        ToolCall("2", "Read", {"file_path": "../x"}),
        ToolCall("3", "Write", {"file_path": "x", "content": ""}),
        ToolCall("4", "Read", {"file_path": "src/a.py"}),
        ToolCall("5", "Glob", {"pattern": "**/*.py"}),
        ToolCall("6", "Grep", {"pattern": "print", "-n": True, "output_mode": "content"}),
        ToolCall("7", "LS", {"path": str(root)}),
        ToolCall("8", "Grep", {"pattern": "("}),
    ]
    out = run_calls(calls, tools, ctx)
    assert out["1"].is_error and "outside the working directory" in out["1"].content
    assert out["2"].is_error and out["3"].is_error and "No such tool" in out["3"].content
    assert out["4"].content == "1\timport os\n2\tprint('hi')\n3\t"
    assert out["5"].content == str(root / "src" / "a.py")
    assert out["6"].content == f"{root / 'src' / 'a.py'}:2:print('hi')"
    assert "  - src/" in out["7"].content and "  - README.md" in out["7"].content
    assert out["8"].is_error and "Invalid regular expression" in out["8"].content


def test_writers_and_batches(root: Path) -> None:
    tools = make_tools(["Edit", "Write", "Bash"])
    ctx = ToolContext(root)
    calls = [
        ToolCall("r1", "Read", {"file_path": "README.md"}),
        ToolCall("r2", "LS", {"path": "."}),
        ToolCall("w", "Edit", {"file_path": "README.md", "old_string": "readme", "new_string": "hello"}),
        ToolCall("b", "Bash", {"command": "cat README.md; exit 3"}),
    ]
    assert [[c.id for c in b] for b in batches(calls, tools)] == [["r1", "r2"], ["w"], ["b"]]
    out = run_calls(calls, tools, ctx)
    assert out["r1"].content == "1\t# readme\n2\t" and (root / "README.md").read_text() == "# hello\n"
    assert out["b"].is_error and "# hello" in out["b"].content and "Exit code 3" in out["b"].content
    assert run_calls([ToolCall("x", "Write", {"file_path": "/tmp/outside.txt", "content": "no"})], tools, ctx)[
        "x"
    ].is_error


def test_memory_order_imports_and_cycles(tmp_path: Path) -> None:
    home, managed = tmp_path / "home", tmp_path / "etc" / "CLAUDE.md"
    project = tmp_path / "work" / "app"
    (project / ".claude" / "rules").mkdir(parents=True)
    home.mkdir()
    managed.parent.mkdir(parents=True)
    managed.write_text("managed")
    (home / "CLAUDE.md").write_text("user")
    # imported files inside the working directory: the CLI leaves out external ones until approved
    (tmp_path / "work" / "CLAUDE.md").write_text("parent @app/a.md")
    (project / "a.md").write_text("A imports @b.md")
    (project / "b.md").write_text("B imports @a.md again")
    (project / "CLAUDE.md").write_text("project\n```\n@not-an-import.md\n```\n`@inline.md`")
    (project / ".claude" / "CLAUDE.md").write_text("dot-claude")
    (project / ".claude" / "rules" / "style.md").write_text("rule")
    (project / "CLAUDE.local.md").write_text("local")
    files = load_memory(project, home=home, managed=managed)
    assert [f.content.split()[0] for f in files] == [
        "managed",
        "user",
        "parent",
        "A",
        "B",
        "project",
        "dot-claude",
        "rule",
        "local",
    ]
    assert [f.kind for f in files][:2] == ["Managed", "User"] and files[-1].kind == "Local"
    text = render_memory(files)
    assert text.startswith("Codebase and user instructions") and "(user's private project instructions" in text
    assert import_paths("see @x.md and `@y.md`\n```\n@z.md\n```", Path("/r")) == [Path("/r/x.md")]


def test_default_provider_choice(tmp_path: Path) -> None:
    assert default_provider_name({"ANTHROPIC_API_KEY": "k", "PATH": ""}) == "anthropic"
    fake = tmp_path / "claude"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    assert default_provider_name({"PATH": str(tmp_path)}) == "claude-cli"
    with pytest.raises(ProviderError) as err:
        default_provider_name({"PATH": str(tmp_path / "none")})
    assert "ANTHROPIC_API_KEY" in str(err.value) and "claude" in str(err.value)


def test_turn_command_new_then_continue(root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    projects = tmp_path / "cfg" / "projects"
    base = ["turn", "--provider", "anthropic", "--cwd", str(root), "--projects-dir", str(projects)]
    assert main([*base, "hello", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["text"] == "echo: hello"
    assert main([*base, "READ README.md"]) == 0
    out = capsys.readouterr()
    assert out.out.strip() == "I read it (1 tool results)." and first["sessionId"] in out.err
    assert main([*base, "--new", "again", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["sessionId"] != first["sessionId"]
