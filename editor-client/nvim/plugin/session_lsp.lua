-- session-lsp: the commands exist as soon as the plugin is on the runtimepath; they use the
-- defaults until require('session_lsp').setup({...}) is called (setup also attaches the server
-- to transcripts as they are opened).
if vim.g.loaded_session_lsp then
  return
end
vim.g.loaded_session_lsp = true

if vim.fn.has('nvim-0.7') ~= 1 then
  vim.api.nvim_err_writeln('session-lsp needs Neovim 0.7 or newer')
  return
end

require('session_lsp').create_commands()
