"""Neovim draws a transcript's control characters as `^[` and `<202e>`, never as they are.

The Neovim client shows what the server sends in buffers (the conversation, the quickfix lists) and in messages
(`vim.notify`); it does not escape them itself. That is right because Neovim draws every character that is not
printable in its own notation: this runs the real Neovim in a pseudo-terminal on a buffer line and a notification
holding an OSC 52, a clear-screen CSI, a title OSC, a C1 CSI, DEL, backspace, bidirectional override and isolate
and a zero-width space, and reads every byte it sends to the terminal.
"""

from __future__ import annotations

import os
import pty
import select
import shutil
import time
from pathlib import Path

import pytest

NVIM = os.environ.get("SESSION_LSP_NVIM") or shutil.which("nvim")
pytestmark = pytest.mark.skipif(
    NVIM is None, reason="NEOVIM NOT AVAILABLE: install it with scripts/setup.d/nvim.sh (apt-get install neovim)"
)

HEAD = "\x1b]52;c;ZXZpbA==\x07\x1b[2J\x1b]0;PWNED\x07\u202e\x9b31m\x7f\x08\u2066\u200b"
RAW = [b"\x1b]52;c;ZXZp", b"ZXZpbA==\x07", b"\x1b]0;PWNED", b"\xc2\x9b", b"\xe2\x80\xae", b"\xe2\x81\xa6", b"\x7f"]
"""The attack's bytes as a terminal would obey them (Neovim's own output is escape sequences too, none of these)."""


def _drain(fd: int, seconds: float, until: bytes | None = None) -> bytes:
    """What the pseudo-terminal `fd` shows within `seconds` (or until it has shown `until`)."""
    out, end = b"", time.monotonic() + seconds
    while time.monotonic() < end and not (until and until in out):
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                out += os.read(fd, 65536)
            except OSError:  # the terminal closed: Neovim is gone
                break
    return out


def test_neovim_draws_control_characters_in_its_notation(tmp_path: Path) -> None:
    assert NVIM is not None
    (tmp_path / "evil.txt").write_text(f"buffer-{HEAD}-end\n")
    (tmp_path / "notify.lua").write_text(
        'vim.defer_fn(function() vim.notify("notify-" .. vim.fn.readfile("evil.txt")[1]) end, 300)\n'
    )
    pid, fd = pty.fork()
    if pid == 0:  # the child: Neovim on the pseudo-terminal
        os.chdir(tmp_path)
        os.environ["TERM"] = "xterm-256color"
        os.execv(NVIM, [NVIM, "--clean", "-n", "-c", "luafile notify.lua", "evil.txt"])
    try:
        out = _drain(fd, 3.0)
        os.write(fd, b"\x1b:qa!\r")
        out += _drain(fd, 1.0)
    finally:
        os.close(fd)
        os.waitpid(pid, 0)
    assert [raw for raw in RAW if raw in out] == []
    text = out.decode("utf-8", "replace")
    assert "buffer-" in text and "notify-buffer-" in text, text[-2000:]
    assert "^[" in text and "^G" in text and "<202e>" in text and "<9b>" in text
