-- :SessionConversation -- a session as a conversation people read, in a read-only buffer.
--
-- The items come from the server's sessions/conversation request. Each tool call and each
-- thinking block is one closed fold; hidden items (system reminders, attachments, the effort
-- carrier) show only after `H`; `<CR>` on a message jumps to its row in the transcript, and on a
-- branch line switches to that branch. The buffer follows the session (sessions/didChange).
--
-- Paging: the buffer shows the last `page` items first; `E` (or <CR> on the "earlier items" line)
-- loads the page before them. Opened at a message (a search hit, `target.at_line`), the buffer
-- reaches back to that message, puts the cursor on it and highlights it.

local C = {}

C.PAGE = 200
C.MAX = 5000 -- the most items the server gives in one answer
local NS = vim.api.nvim_create_namespace('session_lsp_conversation')
local MORE_TEXT = '(earlier items not loaded: E or <CR> here loads them)'

local views = {} -- bufnr -> view { target, leaf, show_hidden, marks, folds, items, has_more, at_id }

local val = require('session_lsp.json').val

local function split(text)
  return vim.split(tostring(text or ''), '\n', { plain = true })
end

local function fmt_time(iso)
  iso = val(iso)
  if type(iso) ~= 'string' then
    return nil
  end
  local d, t = iso:match('^(%d%d%d%d%-%d%d%-%d%d)T(%d%d:%d%d:%d%d)')
  return d and (d .. ' ' .. t) or iso
end

local function thousands(n)
  local s = tostring(math.floor(n))
  local out = s:reverse():gsub('(%d%d%d)', '%1,'):reverse()
  return (out:gsub('^,', ''))
end

local function tokens(usage)
  usage = val(usage)
  if type(usage) ~= 'table' then
    return nil
  end
  local parts = {}
  if val(usage.input) then
    table.insert(parts, 'in ' .. thousands(usage.input))
  end
  if val(usage.output) then
    table.insert(parts, 'out ' .. thousands(usage.output))
  end
  return #parts > 0 and table.concat(parts, ' ') or nil
end

local function header(label, item)
  local bits = { label }
  for _, b in ipairs({ fmt_time(item.time), val(item.model), tokens(item.usage) }) do
    if b then
      table.insert(bits, b)
    end
  end
  table.insert(bits, 'line ' .. (item.line + 1))
  return '## ' .. table.concat(bits, ' · ')
end

local function tool_arg(input)
  if type(input) ~= 'table' then
    return ''
  end
  for _, key in ipairs({ 'file_path', 'command', 'pattern', 'path', 'description', 'prompt', 'url', 'query' }) do
    local v = val(input[key])
    if type(v) == 'string' and v ~= '' then
      v = v:gsub('%s+', ' ')
      return #v > 100 and (v:sub(1, 99) .. '…') or v
    end
  end
  return ''
end

local HIDDEN_LABEL = {
  attachment = function(i)
    return 'attachment · ' .. tostring(val(i.attachmentType) or '')
  end,
  reminder = function()
    return 'system reminder'
  end,
  effort = function()
    return 'effort carrier (empty system message)'
  end,
  system = function(i)
    return 'system · ' .. tostring(val(i.subtype) or '')
  end,
}

--- The buffer lines of `items`, the marks (line -> what <CR> does there), the folds and where
--- each item's lines are (item id -> { first, last }). Pure: no buffer is touched.
function C.render(result, opts)
  opts = opts or {}
  local lines, marks, folds, spans = {}, {}, {}, {}
  local path = result.path
  local function add(text, mark)
    for _, l in ipairs(split(text)) do
      table.insert(lines, l)
      if mark then
        marks[#lines] = mark
      end
    end
  end
  -- a block folded under its title: thinking, a compaction's summary
  local function folded_text(title, item, mark, kind)
    add('')
    local first = #lines + 1
    add(title, mark)
    for _, l in ipairs(split(val(item.text))) do
      add('  ' .. l, mark)
    end
    table.insert(folds, { first, #lines, kind = kind })
  end
  add('# Conversation ' .. tostring(val(result.sessionId) or ''))
  add(string.format('%s · leaf %s', tostring(path), tostring(val(result.leafUuid) or '?')))
  add(string.format('H: %s hidden items · <CR>: go to the row (or switch branch) · za: open/close a fold',
    opts.show_hidden and 'hide' or 'show'))
  if val(result.hasMore) then
    add(MORE_TEXT, { more = true })
  end
  for _, item in ipairs(val(result.items) or {}) do
    local before = #lines
    local at = { path = path, line = item.line }
    local kind = item.kind
    if val(item.hidden) and kind ~= 'user' then
      if opts.show_hidden then
        add('')
        local label = (HIDDEN_LABEL[kind] or function()
          return kind
        end)(item)
        local first = #lines + 1
        add('> [hidden] ' .. label .. ' · line ' .. (item.line + 1), at)
        for _, l in ipairs(split(val(item.text))) do
          add('>   ' .. l, at)
        end
        table.insert(folds, { first, #lines, kind = 'hidden' })
      end
    elseif val(item.hidden) and not opts.show_hidden then
      -- a meta user row: only with the hidden items
    elseif kind == 'user' or kind == 'assistant' or kind == 'system' then
      add('')
      local who = kind == 'user' and 'You' or kind == 'assistant' and 'Claude' or ('System · ' .. tostring(val(item.subtype) or ''))
      if val(item.hidden) then
        who = who .. ' [hidden]'
      end
      add(header(who, item), at)
      local text = val(item.command) or val(item.commandOutput) or val(item.text) or ''
      add(text, at)
      for _, img in ipairs(val(item.images) or {}) do
        add('[image ' .. tostring(val(img.mediaType) or '') .. ']', at)
      end
    elseif kind == 'thinking' then
      folded_text('▸ Thinking', item, at, kind)
    elseif kind == 'tool' then
      add('')
      local first = #lines + 1
      local r = val(item.result)
      local status = not r and '…' or (val(r.isError) and '✗' or '✓')
      add(string.format('▸ %s %s %s', tostring(item.name), tool_arg(val(item.input)), status), at)
      local diff = val(item.diff)
      if diff then
        add('  ```diff', at)
        add('  ' .. (val(diff.created) and 'created ' or 'edited ') .. tostring(diff.filePath), at)
        for _, h in ipairs(diff.hunks or {}) do
          add(string.format('  @@ -%d,%d +%d,%d @@', h.oldStart, h.oldLines, h.newStart, h.newLines), at)
          for _, l in ipairs(h.lines or {}) do
            add('  ' .. l, at)
          end
        end
        add('  ```', at)
      else
        add('  input: ' .. vim.fn.json_encode(val(item.input) or {}), at)
      end
      local sub = val(item.subagent)
      if sub and val(sub.path) then
        add('  subagent ' .. tostring(sub.agentId) .. ': ' .. tostring(sub.path), { path = sub.path, line = 0 })
      end
      if r then
        local rat = { path = path, line = r.line }
        add(string.format('  %s (line %d):', val(r.isError) and 'error' or 'result', r.line + 1), rat)
        for _, l in ipairs(split(val(r.text))) do
          add('    ' .. l, rat)
        end
      else
        add('  (no result recorded)', at)
      end
      table.insert(folds, { first, #lines, kind = 'tool' })
    elseif kind == 'compaction' then
      add('')
      add('──────── ' .. tostring(val(item.text) or 'Conversation compacted') .. ' ────────', at)
    elseif kind == 'summary' then
      folded_text('▸ Summary of the earlier conversation', item, at, kind)
    elseif kind == 'branch' then
      add('')
      add(string.format('%d branches from here (<CR> to switch):', #(item.branches or {})), at)
      for i, b in ipairs(item.branches or {}) do
        add(string.format('  [%d] %s%s', i, tostring(val(b.preview) or ''), val(b.current) and '  (shown)' or ''),
          { branch = b.leafUuid })
      end
    end
    if #lines > before + 1 then
      spans[item.id] = { before + 2, #lines } -- after the blank line that opens each item
    end
  end
  return lines, marks, folds, spans
end

--- The loaded items as one sessions/conversation answer.
local function as_result(view)
  return vim.tbl_extend('force', view.result, { items = view.items, hasMore = view.has_more })
end

--- The item `id` highlighted in `buf`; with `move`, the cursor on it (fold open) in every window.
local function show_item(buf, id, move)
  local view = views[buf]
  local span = view.spans[id]
  vim.api.nvim_buf_clear_namespace(buf, NS, 0, -1)
  if not span then
    return nil
  end
  for l = span[1], span[2] do
    vim.api.nvim_buf_add_highlight(buf, NS, 'Visual', l - 1, 0, -1)
  end
  for _, win in ipairs(move and vim.fn.win_findbuf(buf) or {}) do
    vim.api.nvim_win_set_cursor(win, { span[1], 0 })
    vim.api.nvim_win_call(win, function()
      vim.cmd('silent! normal! zvzt')
    end)
  end
  return span
end

local function apply(buf, result)
  local view = views[buf]
  local lines, marks, folds, spans = C.render(result, { show_hidden = view.show_hidden })
  view.marks, view.folds, view.spans = marks, folds, spans
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    vim.api.nvim_win_call(win, function()
      vim.wo.foldmethod = 'manual'
      vim.wo.foldenable = true
      vim.cmd('silent! normal! zE')
      for _, f in ipairs(folds) do
        vim.cmd(string.format('silent! %d,%dfold', f[1], f[2]))
      end
      vim.cmd('silent! normal! zM')
    end)
  end
  local span = view.at_id and show_item(buf, view.at_id, view.move_to_at)
  view.move_to_at = false
  vim.b[buf].session_lsp_conversation = {
    sessionId = result.sessionId,
    leafUuid = val(result.leafUuid),
    items = #(val(result.items) or {}),
    hasMore = val(result.hasMore) == true,
    folds = #folds,
    show_hidden = view.show_hidden,
    atId = view.at_id or vim.NIL,
    atLine = span and span[1] or vim.NIL,
  }
  vim.b[buf].session_lsp_conversation_version = (vim.b[buf].session_lsp_conversation_version or 0) + 1
end

--- Ask the server again and redraw the buffer `buf`.
function C.refresh(buf, callback)
  local view = views[buf]
  if not view then
    return
  end
  local params = { limit = math.min(C.MAX, math.max(C.PAGE, #view.items)), leafUuid = view.leaf }
  local opening_at = view.target.at_line
  if opening_at then
    params.limit, params.atLine = C.PAGE, opening_at
  end
  C.fetch(view, params, function(result)
    view.target.at_line = nil
    if opening_at then
      view.at_id, view.move_to_at = val(result.atId), true
      for _, item in ipairs(val(result.items) or {}) do
        if item.id == view.at_id and val(item.hidden) then
          view.show_hidden = true -- the message found is one a person does not see by default
        end
      end
      if val(result.atBranch) then
        view.leaf = val(result.leafUuid) -- the branch holding the message: keep showing it
      end
    end
    view.result, view.items, view.has_more = result, val(result.items) or {}, val(result.hasMore) == true
    if vim.api.nvim_buf_is_valid(buf) then
      apply(buf, result)
    end
    if callback then
      callback(result)
    end
  end)
end

--- sessions/conversation for `view` with `params`; callback(result) on success.
function C.fetch(view, params, callback)
  if view.target.path then
    params.path = view.target.path
  else
    params.sessionId = view.target.sessionId
  end
  require('session_lsp').request('sessions/conversation', params, function(e, result)
    if e or not result then
      vim.notify('session-lsp: sessions/conversation: ' .. tostring(e and (e.message or vim.inspect(e))),
        vim.log.levels.ERROR)
      return
    end
    view.target.path = result.path
    callback(result)
  end)
end

--- E: load the page of items before the first one shown; the cursor stays on what it was on.
function C.load_earlier(buf, callback)
  buf = buf or vim.api.nvim_get_current_buf()
  local view = views[buf]
  if not view or not view.has_more or #view.items == 0 then
    return callback and callback(nil)
  end
  local first = view.items[1].id
  local win = vim.fn.bufwinid(buf)
  local span = view.spans[first]
  local offset = (win ~= -1 and span) and (vim.api.nvim_win_get_cursor(win)[1] - span[1]) or 0
  C.fetch(view, { limit = C.PAGE, before = first, leafUuid = view.leaf }, function(result)
    local items = val(result.items) or {}
    vim.list_extend(items, view.items)
    view.items, view.has_more = items, val(result.hasMore) == true
    view.at_id = nil
    if vim.api.nvim_buf_is_valid(buf) then
      apply(buf, as_result(view))
      local now = view.spans[first]
      if win ~= -1 and now and vim.api.nvim_win_is_valid(win) then
        vim.api.nvim_win_set_cursor(win, { math.max(1, now[1] + offset), 0 })
      end
    end
    if callback then
      callback(result)
    end
  end)
end

--- <CR>: jump to the row of the message under the cursor, or switch to the branch named there.
function C.enter(buf)
  buf = buf or vim.api.nvim_get_current_buf()
  local view = views[buf]
  local mark = view and view.marks[vim.fn.line('.')]
  if not mark then
    return
  end
  if mark.more then
    return C.load_earlier(buf)
  end
  if mark.branch then
    view.leaf = mark.branch
    view.items, view.at_id = {}, nil
    return C.refresh(buf)
  end
  vim.cmd('wincmd p')
  if vim.api.nvim_get_current_buf() == buf then
    vim.cmd('aboveleft split')
  end
  vim.cmd('edit ' .. vim.fn.fnameescape(mark.path))
  local last = vim.api.nvim_buf_line_count(0)
  vim.api.nvim_win_set_cursor(0, { math.min(mark.line + 1, last), 0 })
  vim.cmd('normal! zz')
end

--- H: show or hide what the model saw but a person did not write.
function C.toggle_hidden(buf)
  buf = buf or vim.api.nvim_get_current_buf()
  local view = views[buf]
  if not view then
    return
  end
  view.show_hidden = not view.show_hidden
  if view.result then
    apply(buf, as_result(view))
  end
end

--- Open the conversation of `target` ({sessionId, path?, at_line?}) in a new buffer in a split;
--- with `at_line` (0-based line of a row in the transcript), at that row's message.
function C.open(target, opts, callback)
  opts = opts or {}
  vim.cmd(opts.split or 'botright vsplit')
  vim.cmd('enew')
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = 'markdown'
  vim.bo[buf].modifiable = false
  pcall(vim.api.nvim_buf_set_name, buf, 'session-conversation://' .. target.sessionId)
  views[buf] = {
    target = { sessionId = target.sessionId, path = target.path, at_line = target.at_line },
    show_hidden = false,
    marks = {},
    spans = {},
    items = {},
  }
  local map = function(lhs, fn, desc)
    vim.api.nvim_buf_set_keymap(buf, 'n', lhs, '', { noremap = true, silent = true, callback = fn, desc = desc })
  end
  map('<CR>', function()
    C.enter(buf)
  end, 'go to the row in the transcript, or switch branch')
  map('H', function()
    C.toggle_hidden(buf)
  end, 'show/hide what the model saw')
  map('R', function()
    C.refresh(buf)
  end, 'reload')
  map('E', function()
    C.load_earlier(buf)
  end, 'load earlier items')
  vim.api.nvim_create_autocmd('BufWipeout', {
    buffer = buf,
    once = true,
    callback = function()
      views[buf] = nil
    end,
  })
  C.refresh(buf, callback)
  return buf
end

--- Redraw the conversation buffers of the sessions in `ids` (a set).
function C.on_change(ids)
  for buf, view in pairs(views) do
    if vim.api.nvim_buf_is_valid(buf) and view.result and ids[view.result.sessionId] then
      C.refresh(buf)
    end
  end
end

return C
