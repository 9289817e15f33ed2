"""Neovim: a store's session that takes a local session's id is not the one `:SessionResume` acts on.

`sessions/list` gives the local folder's sessions, then each store's; whoever can write to a shared store picks its
ids (a teammate's pushed session has a known one). The plugin kept the last of an id, so `:SessionResume <id>` of a
local session (or from its transcript) ran `claude --resume` in the cwd the store's rows record. Real headless
Neovim, the plugin as shipped; no server is needed (the sessions are remembered as a list answer would give them).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PLUGIN = REPO / "editor-client" / "nvim"
NVIM = os.environ.get("SESSION_LSP_NVIM") or shutil.which("nvim")
SID = "33333333-3333-4333-8333-333333333333"
pytestmark = [pytest.mark.editor, pytest.mark.skipif(NVIM is None, reason="NEOVIM NOT AVAILABLE")]

SCRIPT = """
local out = vim.env.SLSP_OUT
local M = require('session_lsp').setup({ autostart = false, terminal_insert = false,
  claude_cmd = { 'sh', '-c', 'exit 0', 'claude' } })
local function done(rec) local f = io.open(out, 'w'); f:write(vim.fn.json_encode(rec)); f:close(); vim.cmd('qa!') end
M.remember_sessions({
  { sessionId = vim.env.SLSP_SID, path = vim.env.SLSP_LOCAL .. '/s.jsonl', cwd = vim.env.SLSP_LOCAL },
  { sessionId = vim.env.SLSP_SID, path = '/mirror/s.jsonl', cwd = vim.env.SLSP_PLANTED, storeId = 'team', readOnly = true },
})
local ok, e = pcall(M.resume, vim.env.SLSP_SID, function(_, _, cwd)
  done({ cwd = cwd, info_cwd = M.session_info(vim.env.SLSP_SID).cwd })
end)
if not ok then done({ error = tostring(e) }) end
vim.defer_fn(function() done({ error = 'no resume' }) end, 10000)
"""


def test_resume_of_a_local_session_runs_in_its_own_cwd_not_a_stores(tmp_path: Path) -> None:
    local, planted = tmp_path / "work", tmp_path / "planted"
    local.mkdir()
    planted.mkdir()
    script, out = tmp_path / "t.lua", tmp_path / "out.json"
    script.write_text(SCRIPT)
    env = {**os.environ, "SLSP_OUT": str(out), "SLSP_SID": SID, "SLSP_LOCAL": str(local), "SLSP_PLANTED": str(planted)}
    assert NVIM is not None
    subprocess.run(
        [NVIM, "--headless", "--clean", "--cmd", f"set rtp^={PLUGIN}", "-c", f"luafile {script}"],
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )
    rec = json.loads(out.read_text())
    assert rec.get("cwd") == str(local), rec
    assert rec.get("info_cwd") == str(local), rec


STORE_ONLY = """
local out = vim.env.SLSP_OUT
local M = require('session_lsp').setup({ autostart = false, terminal_insert = false,
  claude_cmd = { 'sh', '-c', 'exit 0', 'claude' } })
local function done(rec) local f = io.open(out, 'w'); f:write(vim.fn.json_encode(rec)); f:close(); vim.cmd('qa!') end
M.remember_sessions({
  { sessionId = vim.env.SLSP_SID, path = '/mirror/s.jsonl', cwd = vim.env.SLSP_PLANTED, storeId = 'team', readOnly = true },
})
M.resume(vim.env.SLSP_SID, function(_, _, cwd) done({ cwd = cwd }) end)
vim.defer_fn(function() done({ terminal = vim.bo.buftype == 'terminal' }) end, 500)
"""


def test_a_store_session_is_not_resumed_in_the_cwd_its_rows_record(tmp_path: Path) -> None:
    planted = tmp_path / "planted"
    planted.mkdir()
    script, out = tmp_path / "t.lua", tmp_path / "out.json"
    script.write_text(STORE_ONLY)
    env = {**os.environ, "SLSP_OUT": str(out), "SLSP_SID": SID, "SLSP_PLANTED": str(planted)}
    assert NVIM is not None
    subprocess.run(
        [NVIM, "--headless", "--clean", "--cmd", f"set rtp^={PLUGIN}", "-c", f"luafile {script}"],
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )
    assert json.loads(out.read_text()) == {"terminal": False}
