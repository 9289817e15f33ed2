-- Values of the server's JSON answers as Lua sees them.
local M = {}

--- JSON null arrives as vim.NIL, which is truthy in Lua: nil for it, the value otherwise.
function M.val(x)
  if x == vim.NIL then
    return nil
  end
  return x
end

return M
