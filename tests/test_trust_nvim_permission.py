"""Neovim's permission prompt shows every line of what will run.

The plugin's own prompt (`confirm()`, when no `permission_prompt` is given) showed the first 30 lines of the
server's preview, then `...`, and dropped the blank ones: a command whose first 30 lines were harmless hid the rest,
which ran all the same when allowed. The server already bounds the preview (3,000 characters, the cut said at its
start; runs of blank lines counted, `server.agent.permissions`), so the prompt shows it whole. The folder it runs in
(the session's recorded cwd, transcript data) stays on its line: a newline in its name drew a line of its own. This
runs the real
Neovim in a pseudo-terminal tall enough for the whole prompt, has the plugin's handler answer a `sessions/permission`
request as the server sends it, reads what Neovim draws, and answers Deny with the prompt's key.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import shutil
import struct
import termios
from pathlib import Path

import pytest
from test_trust_nvim_terminal import _drain

from server.agent.permissions import preview

NVIM = os.environ.get("SESSION_LSP_NVIM") or shutil.which("nvim")
PLUGIN = Path(__file__).resolve().parent.parent / "editor-client" / "nvim"
pytestmark = [
    pytest.mark.editor,
    pytest.mark.skipif(
        NVIM is None, reason="NEOVIM NOT AVAILABLE: install it with scripts/setup.d/nvim.sh (apt-get install neovim)"
    ),
]

ROWS, COLS = 90, 140
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][0-9A-Za-z]|\x1b[=>]")
"""Neovim's own escape sequences (colours, cursor moves), taken out to read the text it draws."""
SCRIPT = """
vim.opt.runtimepath:prepend(PLUGIN)
local params = vim.fn.json_decode(table.concat(vim.fn.readfile('params.json'), '\\n'))
vim.defer_fn(function()
  local handler = require('session_lsp').client_config().handlers['sessions/permission']
  local answer = handler(nil, params)
  vim.fn.writefile({ vim.fn.json_encode(answer) }, 'answer.json')
  vim.cmd('qa!')
end, 300)
"""


def test_the_prompt_shows_every_line_of_a_long_command(tmp_path: Path) -> None:
    assert NVIM is not None
    steps = [f"echo step-{n:02d}-ok" for n in range(1, 36)]
    (tmp_path / "work\nok-to-run-here").mkdir()
    command = "\n".join([*steps[:20], "", *steps[20:], "./tail-of-the-command.sh"])
    params = {
        "sessionId": "11111111-1111-4111-8111-111111111111",
        "tool": "Bash",
        "toolUseId": "toolu_1",
        "input": {"command": command},
        "cwd": str(tmp_path / "work\nok-to-run-here"),  # a recorded cwd may be any folder name
        "preview": preview("Bash", {"command": command}),
    }
    assert params["preview"] == command  # nothing in it the server writes out: the prompt's own cut is what hid it
    (tmp_path / "params.json").write_text(json.dumps(params))
    (tmp_path / "ask.lua").write_text(f"local PLUGIN = {json.dumps(str(PLUGIN))}\n{SCRIPT}")
    pid, fd = pty.fork()
    if pid == 0:  # the child: Neovim on the pseudo-terminal
        os.chdir(tmp_path)
        os.environ["TERM"] = "xterm-256color"
        os.execv(NVIM, [NVIM, "--clean", "-n", "-c", "luafile ask.lua"])
    try:
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        out = _drain(fd, 10.0, until=b"&Deny".replace(b"&", b"[D]"))
        os.write(fd, b"d")
        out += _drain(fd, 3.0)
    finally:
        os.close(fd)
        os.waitpid(pid, 0)
    text = ESCAPES.sub("", out.decode("utf-8", "replace"))
    assert "[D]eny" in text, text[-3000:]
    assert "work^@ok-to-run-here:" in text  # the folder's name stays on its line (^@ is Neovim's newline in a name)
    assert [s for s in steps if s not in text] == [] and "./tail-of-the-command.sh" in text, text[-3000:]
    assert re.search(r"echo step-20-ok\r?\n\r?\n\r?echo step-21-ok", text)  # the blank line is shown as it is
    assert json.loads((tmp_path / "answer.json").read_text()) == {"decision": "deny"}
