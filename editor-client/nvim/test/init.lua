-- Headless test harness: `nvim --headless --clean -u editor-client/nvim/test/init.lua`
-- with SESSION_LSP_TEST_CONFIG naming a JSON file of parameters (see tests/test_nvim_client.py).
-- It drives the plugin against a projects folder, records what it observes in a JSON file
-- (rewritten after every step, so a crash still leaves the steps before it) and always quits.
local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
local plugin_dir = vim.fn.fnamemodify(here, ':h')
vim.opt.runtimepath:prepend(plugin_dir)
vim.opt.swapfile = false
vim.opt.shadafile = 'NONE'
vim.opt.more = false

vim.api.nvim_create_autocmd('VimEnter', {
  once = true,
  callback = function()
    vim.schedule(function()
      local ok, e = xpcall(function()
        dofile(here .. '/headless.lua').run()
      end, debug.traceback)
      if not ok then
        io.stderr:write('session-lsp test harness failed: ' .. tostring(e) .. '\n')
      end
      vim.cmd('qa!')
    end)
  end,
})
