-- The steps of the headless test. Each step records observations (not verdicts: the pytest side
-- judges them) under results[<step>]; a step that throws records its error and the run goes on.
local H = {}

local cfg
local results = { nvim = vim.version(), steps = {} }

local function write_results()
  local f = io.open(cfg.out, 'w')
  if f then
    f:write(vim.fn.json_encode(results))
    f:close()
  end
end

local function log(msg)
  io.stderr:write('[nvim-test] ' .. msg .. '\n')
end

local function step(name, fn)
  log('step ' .. name)
  local started = vim.loop.hrtime()
  local rec = {}
  local ok, e = xpcall(function()
    fn(rec)
  end, debug.traceback)
  rec.ok = ok
  if not ok then
    rec.error = tostring(e)
    log('step ' .. name .. ' failed: ' .. rec.error)
  end
  rec.ms = math.floor((vim.loop.hrtime() - started) / 1e6)
  results[name] = rec
  table.insert(results.steps, name)
  write_results()
  return ok
end

local function wait(ms, cond)
  return vim.wait(ms, cond, 50)
end

local function clients_of(bufnr)
  local out = {}
  if vim.lsp.get_clients then
    out = vim.lsp.get_clients({ bufnr = bufnr })
  else
    for _, c in pairs(vim.lsp.buf_get_clients(bufnr)) do
      table.insert(out, c)
    end
  end
  return out
end

local function our_client(bufnr)
  for _, c in ipairs(clients_of(bufnr)) do
    if c.name == 'session-lsp' then
      return c
    end
  end
  return nil
end

local function edit(path)
  vim.cmd('edit ' .. vim.fn.fnameescape(path))
  return vim.api.nvim_get_current_buf()
end

local function wait_attached(bufnr, rec)
  local client
  rec.attached = wait(cfg.timeout_ms, function()
    client = our_client(bufnr)
    return client ~= nil and client.initialized == true
  end)
  if client then
    rec.client_name = client.name
    rec.client_id = client.id
    rec.root_dir = client.config.root_dir
    rec.initialized = client.initialized == true
  end
  return client
end

local function plain_diags(bufnr)
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    table.insert(out, {
      lnum = d.lnum,
      col = d.col,
      code = d.code ~= nil and tostring(d.code) or vim.NIL,
      severity = d.severity,
      message = d.message,
      source = d.source or vim.NIL,
    })
  end
  return out
end

local function hover_text(result)
  local c = result and result.contents
  if c == nil or c == vim.NIL then
    return nil
  end
  if type(c) == 'string' then
    return c
  end
  if c.value then
    return c.value
  end
  local parts = {}
  for _, item in ipairs(c) do
    table.insert(parts, type(item) == 'string' and item or item.value or '')
  end
  return table.concat(parts, '\n')
end

local function request_sync(bufnr, method, params)
  local res, e = vim.lsp.buf_request_sync(bufnr, method, params, cfg.timeout_ms)
  if not res then
    error(method .. ' failed: ' .. tostring(e))
  end
  for _, r in pairs(res) do
    if r.err then
      error(method .. ' error: ' .. vim.inspect(r.err))
    end
    return r.result
  end
  return nil
end

local function hover_at(path, line, rec)
  local bufnr = edit(path)
  wait_attached(bufnr, rec)
  local params = { textDocument = { uri = vim.uri_from_fname(path) }, position = { line = line, character = 0 } }
  -- The server may still be indexing: ask again until it answers with something.
  local text
  wait(cfg.timeout_ms, function()
    text = hover_text(request_sync(bufnr, 'textDocument/hover', params))
    return text ~= nil
  end)
  rec.line = line
  rec.markdown = text or vim.NIL
end

local function buf_path(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == '' then
    return ''
  end
  return vim.loop.fs_realpath(name) or name
end

function H.run()
  cfg = vim.fn.json_decode(table.concat(vim.fn.readfile(os.getenv('SESSION_LSP_TEST_CONFIG')), '\n'))
  local level = cfg.lsp_log_level or 'WARN'
  if vim.lsp.log and vim.lsp.log.set_level then
    vim.lsp.log.set_level(level)
  else
    vim.lsp.set_log_level(level)
  end
  local sl = require('session_lsp')
  results.has_vim_lsp_start = vim.lsp.start ~= nil
  write_results()

  step('setup', function(rec)
    sl.setup({
      cmd = cfg.cmd,
      projects_dir = cfg.projects_dir,
      provider = cfg.provider,
      claude_cmd = cfg.claude_cmd,
      terminal_insert = false,
    })
    rec.commands = {}
    for _, name in ipairs({ 'Sessions', 'SessionResume', 'SessionFork', 'SessionTurn' }) do
      rec.commands[name] = vim.fn.exists(':' .. name) == 2
    end
    rec.projects_dir = sl.projects_dir()
  end)

  step('attach', function(rec)
    local bufnr = edit(cfg.damaged_path)
    wait_attached(bufnr, rec)
    rec.buffer = buf_path(bufnr)
    -- a file outside the projects folder is left alone
    local other = edit(cfg.outside_path)
    vim.wait(500)
    rec.outside_clients = #clients_of(other)
  end)

  step('diagnostics', function(rec)
    local bufnr = edit(cfg.damaged_path)
    wait_attached(bufnr, rec)
    rec.found = wait(cfg.timeout_ms, function()
      for _, d in ipairs(vim.diagnostic.get(bufnr)) do
        if d.code == 'invalid-json' then
          return true
        end
      end
      return false
    end)
    rec.diagnostics = plain_diags(bufnr)
  end)

  step('hover', function(rec)
    hover_at(cfg.hover.path, cfg.hover.line, rec)
  end)

  step('hover_damaged', function(rec)
    hover_at(cfg.hover_damaged.path, cfg.hover_damaged.line, rec)
  end)

  step('definition', function(rec)
    local d = cfg.definition
    local bufnr = edit(d.path)
    local client = wait_attached(bufnr, rec)
    vim.api.nvim_win_set_cursor(0, { d.line + 1, d.col })
    local params = vim.lsp.util.make_position_params(0, client and client.offset_encoding or 'utf-16')
    rec.position = params.position
    local result = request_sync(bufnr, 'textDocument/definition', params)
    local locs = {}
    if result and result ~= vim.NIL then
      if result.uri or result.targetUri then
        result = { result }
      end
      for _, l in ipairs(result) do
        local range = l.range or l.targetSelectionRange
        table.insert(locs, { path = vim.uri_to_fname(l.uri or l.targetUri), line = range.start.line })
      end
    end
    rec.locations = locs
  end)

  step('sessions', function(rec)
    vim.fn.setqflist({}, 'f')
    vim.cmd('Sessions')
    rec.listed = wait(cfg.timeout_ms, function()
      local q = vim.fn.getqflist({ title = 1, size = 1 })
      return q.title == 'Claude sessions' and q.size > 0
    end)
    rec.first_partial = false
    for _, it in ipairs(vim.fn.getqflist({ items = 1 }).items) do
      rec.first_partial = rec.first_partial or it.text:find('… messages', 1, true) ~= nil
    end
    -- a list that came partial (the server still indexing) is listed again on sessions/didChange
    rec.whole = wait(cfg.timeout_ms, function()
      for _, it in ipairs(vim.fn.getqflist({ items = 1 }).items) do
        if it.text:find('… messages', 1, true) then
          return false
        end
      end
      return true
    end)
    local q = vim.fn.getqflist({ title = 1, items = 1, context = 1 })
    rec.title = q.title
    rec.items = {}
    for _, it in ipairs(q.items) do
      table.insert(rec.items, { path = buf_path(it.bufnr), lnum = it.lnum, text = it.text })
    end
    rec.ids = type(q.context) == 'table' and q.context.ids or {}
    rec.quickfix_window_open = vim.fn.getqflist({ winid = 1 }).winid ~= 0
  end)

  step('partial_format', function(rec)
    local item = {
      sessionId = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
      title = 'a session still being indexed',
      modified = '2026-01-01T00:00:00.000Z',
      messageCount = vim.NIL,
      usage = vim.NIL,
      forkedFrom = vim.NIL,
      subagents = {},
      partial = true,
      pending = { 'messageCount', 'usage', 'forkedFrom' },
    }
    rec.partial_text = sl.format_session(item)
    item.messageCount, item.partial, item.pending = 12, false, nil
    rec.whole_text = sl.format_session(item)
  end)

  step('open_at_leaf', function(rec)
    local q = vim.fn.getqflist({ context = 1 })
    local idx
    for i, id in ipairs(q.context.ids) do
      if id == cfg.open_session then
        idx = i
      end
    end
    rec.index = idx or vim.NIL
    assert(idx, 'session ' .. cfg.open_session .. ' is not in the list')
    vim.cmd('copen')
    vim.api.nvim_win_set_cursor(0, { idx, 0 })
    local keys = vim.api.nvim_replace_termcodes('<CR>', true, false, true)
    vim.api.nvim_feedkeys(keys, 'x', false)
    rec.opened = wait(cfg.timeout_ms, function()
      return buf_path(vim.api.nvim_get_current_buf()) == cfg.open_path and vim.fn.line('.') > 1
    end)
    rec.buffer = buf_path(vim.api.nvim_get_current_buf())
    rec.cursor_line = vim.fn.line('.') - 1
    rec.line_text = vim.api.nvim_get_current_line()
  end)

  step('resume', function(rec)
    vim.cmd('SessionResume ' .. cfg.resume_session)
    local out
    rec.ran = wait(cfg.timeout_ms, function()
      if vim.bo.buftype ~= 'terminal' then
        return false
      end
      -- the terminal wraps long lines at its width: join them back
      local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '')
      out = text:match('(CLAUDE%-RESUME.-) END')
      return out ~= nil
    end)
    rec.buftype = vim.bo.buftype
    rec.output = out or vim.NIL
    rec.nvim_cwd = vim.fn.getcwd()
  end)

  step('fork', function(rec)
    local bufnr = edit(cfg.fork.path)
    wait_attached(bufnr, rec)
    local before = buf_path(bufnr)
    vim.cmd('SessionFork! forked from nvim')
    rec.opened = wait(cfg.timeout_ms, function()
      local p = buf_path(vim.api.nvim_get_current_buf())
      return p ~= before and p:match('%.jsonl$') ~= nil
    end)
    rec.buffer = buf_path(vim.api.nvim_get_current_buf())
    rec.cursor_line = vim.fn.line('.') - 1
    rec.line_count = vim.api.nvim_buf_line_count(0)
  end)

  if cfg.turn then
    step('turn', function(rec)
      local bufnr = edit(cfg.turn.path)
      wait_attached(bufnr, rec)
      local got_result
      local turn_buf = sl.turn(cfg.turn.prompt, {}, function(result, e)
        got_result = { result = result or vim.NIL, err = e and (e.message or vim.inspect(e)) or vim.NIL }
      end)
      rec.done = wait(cfg.turn_timeout_ms or cfg.timeout_ms, function()
        return got_result ~= nil
      end)
      rec.response = got_result or vim.NIL
      rec.lines = vim.api.nvim_buf_get_lines(turn_buf, 0, -1, false)
      rec.progress_reports = vim.b[turn_buf].session_lsp_reports or 0
    end)
  end

  if cfg.permission then
    step('permission', function(rec)
      local bufnr = edit(cfg.permission.path)
      wait_attached(bufnr, rec)
      rec.asked = {}
      -- the user's choice, as a prompt function would return it (the default one is confirm())
      sl.config.permission_prompt = function(params)
        table.insert(rec.asked, { tool = params.tool, preview = params.preview })
        return cfg.permission.answer
      end
      local got
      sl.turn(cfg.permission.prompt, {}, function(result, e)
        got = { result = result or vim.NIL, err = e and (e.message or vim.inspect(e)) or vim.NIL }
      end)
      rec.done = wait(cfg.turn_timeout_ms or cfg.timeout_ms, function()
        return got ~= nil
      end)
      rec.response = got or vim.NIL
      sl.config.permission_prompt = nil
    end)
  end

  if cfg.conversation then
    step('conversation', function(rec)
      local c = cfg.conversation
      local bufnr = edit(c.path)
      wait_attached(bufnr, rec)
      vim.cmd('SessionConversation')
      local conv = vim.api.nvim_get_current_buf()
      local function version()
        return vim.b[conv].session_lsp_conversation_version or 0
      end
      rec.rendered = wait(cfg.timeout_ms, function()
        return version() > 0
      end)
      rec.name = vim.api.nvim_buf_get_name(conv)
      rec.modifiable = vim.bo[conv].modifiable
      rec.info = vim.b[conv].session_lsp_conversation
      rec.lines = vim.api.nvim_buf_get_lines(conv, 0, -1, false)
      -- the Edit call: a closed fold that opens with zo and closes with zc
      local edit_line
      for i, l in ipairs(rec.lines) do
        if l:match('^▸ Edit ') then
          edit_line = i
        end
      end
      rec.edit_line = edit_line or vim.NIL
      vim.api.nvim_win_set_cursor(0, { edit_line, 0 })
      rec.fold_closed_at_start = vim.fn.foldclosed(edit_line)
      rec.fold_end = vim.fn.foldclosedend(edit_line)
      rec.fold_text_lines = vim.api.nvim_buf_get_lines(conv, edit_line - 1, rec.fold_end, false)
      vim.cmd('normal! zo')
      rec.fold_closed_after_zo = vim.fn.foldclosed(edit_line)
      vim.cmd('normal! zc')
      rec.fold_closed_after_zc = vim.fn.foldclosed(edit_line)
      rec.closed_folds = 0
      for i = 1, #rec.lines do
        if vim.fn.foldclosed(i) == i then
          rec.closed_folds = rec.closed_folds + 1
        end
      end
      -- H shows the hidden items
      local before = version()
      vim.api.nvim_feedkeys('H', 'x', false)
      wait(cfg.timeout_ms, function()
        return version() > before
      end)
      rec.lines_hidden = vim.api.nvim_buf_get_lines(conv, 0, -1, false)
      before = version()
      vim.api.nvim_feedkeys('H', 'x', false)
      wait(cfg.timeout_ms, function()
        return version() > before
      end)
      rec.lines_after_second_h = #vim.api.nvim_buf_get_lines(conv, 0, -1, false)
      -- <CR> on a prompt jumps to its row in the transcript
      local prompt_line
      for i, l in ipairs(vim.api.nvim_buf_get_lines(conv, 0, -1, false)) do
        if l == c.prompt then
          prompt_line = i
        end
      end
      rec.prompt_line = prompt_line or vim.NIL
      vim.api.nvim_win_set_cursor(0, { prompt_line, 0 })
      vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('<CR>', true, false, true), 'x', false)
      rec.jumped_to = buf_path(vim.api.nvim_get_current_buf())
      rec.jumped_line = vim.fn.line('.') - 1
      -- <CR> on the other branch switches to it
      vim.cmd('wincmd p')
      rec.back_in = vim.api.nvim_get_current_buf() == conv
      local branch_line
      for i, l in ipairs(vim.api.nvim_buf_get_lines(conv, 0, -1, false)) do
        if l:match('^  %[%d+%] ') and not l:match('%(shown%)$') then
          branch_line = i
        end
      end
      rec.branch_line = branch_line or vim.NIL
      before = version()
      vim.api.nvim_win_set_cursor(0, { branch_line, 0 })
      vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('<CR>', true, false, true), 'x', false)
      wait(cfg.timeout_ms, function()
        return version() > before
      end)
      rec.branch_info = vim.b[conv].session_lsp_conversation
      rec.branch_lines = vim.api.nvim_buf_get_lines(conv, 0, -1, false)
    end)
  end

  -- :SessionSearch, then <CR> on a hit: the conversation opens at that message, highlighted
  local function open_hit(rec, query, hit_path, hit_line)
    vim.cmd('only')
    local done
    sl.search(query, { callback = function(hits) done = hits end })
    wait(cfg.timeout_ms, function() return done ~= nil end)
    rec.hits = #(done or {})
    rec.in_quickfix = vim.bo.buftype == 'quickfix'
    local index
    for i, h in ipairs(done or {}) do
      if vim.loop.fs_realpath(h.path) == vim.loop.fs_realpath(hit_path) and h.line == hit_line and not h.session then
        index = i
      end
    end
    rec.index = index or vim.NIL
    vim.api.nvim_win_set_cursor(0, { index, 0 })
    vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('<CR>', true, false, true), 'x', false)
    local conv
    wait(cfg.timeout_ms, function()
      conv = vim.api.nvim_get_current_buf()
      return (vim.b[conv].session_lsp_conversation_version or 0) > 0
    end)
    rec.info = vim.b[conv].session_lsp_conversation
    rec.cursor = vim.fn.line('.')
    rec.cursor_text = vim.api.nvim_buf_get_lines(conv, rec.cursor - 1, rec.cursor + 1, false)
    rec.top = vim.fn.line('w0')
    rec.bottom = vim.fn.line('w$')
    local ns = vim.api.nvim_create_namespace('session_lsp_conversation')
    rec.highlighted = {}
    for _, m in ipairs(vim.api.nvim_buf_get_extmarks(conv, ns, 0, -1, {})) do
      table.insert(rec.highlighted, m[2] + 1)
    end
    rec.lines = vim.api.nvim_buf_get_lines(conv, 0, -1, false)
    return conv
  end

  if cfg.search then
    step('search_hit', function(rec)
      open_hit(rec, cfg.search.query_big, cfg.search.big_path, cfg.search.big_line)
    end)
    step('search_branch_hit', function(rec)
      open_hit(rec, cfg.search.query_branch, cfg.search.branch_path, cfg.search.branch_line)
    end)
    step('search_hidden_hit', function(rec)
      open_hit(rec, cfg.search.query_hidden, cfg.search.branch_path, cfg.search.hidden_line)
    end)
  end

  -- a large session: the last page first, E loads the pages before it
  if cfg.paging then
    step('paging', function(rec)
      vim.cmd('only')
      local conv
      local opened
      conv = sl.conversation(cfg.paging.session, {}, function() opened = true end)
      wait(cfg.timeout_ms, function() return opened end)
      local function version()
        return vim.b[conv].session_lsp_conversation_version or 0
      end
      rec.pages = {}
      local function observe()
        local lines = vim.api.nvim_buf_get_lines(conv, 0, -1, false)
        table.insert(rec.pages, {
          info = vim.b[conv].session_lsp_conversation,
          first_prompt = (function()
            for _, l in ipairs(lines) do
              if l:match('^paging prompt %d+') then
                return l
              end
            end
            return vim.NIL
          end)(),
          last_line = lines[#lines],
          more_line = lines[4] or vim.NIL,
          cursor_text = vim.api.nvim_get_current_line(),
        })
      end
      observe()
      -- the cursor on the last prompt shown: after loading earlier items it is still on it
      local lines = vim.api.nvim_buf_get_lines(conv, 0, -1, false)
      for i = #lines, 1, -1 do
        if lines[i]:match('^paging prompt %d+') then
          vim.api.nvim_win_set_cursor(0, { i, 0 })
          break
        end
      end
      rec.cursor_before = vim.api.nvim_get_current_line()
      for _ = 1, 10 do
        if not vim.b[conv].session_lsp_conversation.hasMore then
          break
        end
        local before = version()
        vim.api.nvim_feedkeys('E', 'x', false)
        wait(cfg.timeout_ms, function() return version() > before end)
        observe()
      end
    end)
  end

  results.finished = true
  write_results()
  pcall(function()
    for _, c in ipairs(vim.lsp.get_active_clients()) do
      c.stop()
    end
    vim.wait(2000, function()
      return #vim.lsp.get_active_clients() == 0
    end, 50)
  end)
end

return H
