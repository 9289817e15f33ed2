-- session-lsp for Neovim: attaches the session-lsp language server to Claude Code transcripts
-- (~/.claude/projects/<escaped-cwd>/<sessionId>.jsonl) and adds :Sessions, :SessionResume,
-- :SessionFork and :SessionTurn.
--
-- Works on Neovim 0.7 (vim.lsp.start_client + vim.lsp.buf_attach_client) and on 0.8+ (vim.lsp.start).

local M = {}

local uv = vim.loop
local NAME = 'session-lsp'
local QF_TITLE = 'Claude sessions'
local UUID_PATTERN = '^%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$'

local defaults = {
  -- The server command; `session-lsp` must be on PATH unless you give a full path.
  cmd = { 'session-lsp', 'serve', '--stdio' },
  -- The projects folder; nil = $CLAUDE_CONFIG_DIR/projects or ~/.claude/projects.
  projects_dir = nil,
  -- The model provider for :SessionTurn (nil = the server's default; 'anthropic' or 'claude-cli').
  provider = nil,
  model = nil,
  -- The Claude Code command :SessionResume runs (a string or a list); `--resume <id>` is appended.
  claude_cmd = { 'claude' },
  -- Watch the projects folder for changes (and poll instead of OS events, for network drives).
  watch = true,
  polling = false,
  -- Session stores (postgresql:// URLs, or { url = ..., schema = ... }) whose sessions are listed beside
  -- the local ones, read-only; they open as `session-store:` buffers that the server fills.
  stores = {},
  -- Attach the server to transcripts as they are opened.
  autostart = true,
  -- Where :SessionResume and :SessionTurn open their buffers.
  terminal_split = 'botright split',
  turn_split = 'botright vsplit',
  -- Enter terminal mode after :SessionResume.
  terminal_insert = true,
  -- Open the quickfix window after :Sessions.
  open_quickfix = true,
  -- Passed on to the LSP client.
  on_attach = nil,
  capabilities = nil,
  -- Milliseconds to wait for the server to come up before a command gives up.
  start_timeout = 30000,
  -- :SessionTurn offers Bash, Edit and Write too, asking before each call (false: read-only tools only).
  ask_permission = true,
  -- How to ask: function(params) -> 'allow' | 'allowSession' | 'deny'; nil = a confirm() prompt.
  permission_prompt = nil,
}

M.config = vim.deepcopy(defaults)

local state = {
  setup_done = false,
  sessions = {}, -- sessionId -> the last sessions/list entry
  list_partial = false, -- the :Sessions list came while the server's first index ran: list again on didChange
  changes = 0, -- sessions/didChange notifications seen
  turns = {}, -- progress token -> turn
  next_token = 0,
}

-- ---------------------------------------------------------------------------------------------
-- small helpers

local has_011 = vim.fn.has('nvim-0.11') == 1

local function notify(msg, level)
  vim.notify('session-lsp: ' .. msg, level or vim.log.levels.INFO)
end

local function warn(msg)
  notify(msg, vim.log.levels.WARN)
end

local function err(msg)
  notify(msg, vim.log.levels.ERROR)
end

--- JSON null arrives as vim.NIL: turn it into nil.
local val = require('session_lsp.json').val

local function strip_slash(p)
  if #p > 1 then
    p = p:gsub('/+$', '')
  end
  return p
end

--- An absolute, normalized path (symlinks resolved when the path exists).
local function normalize(p)
  if not p or p == '' then
    return nil
  end
  p = vim.fn.fnamemodify(vim.fn.expand(p), ':p')
  local real = uv.fs_realpath(p)
  return strip_slash(real or p)
end

local function is_dir(p)
  local st = p and uv.fs_stat(p)
  return st ~= nil and st.type == 'directory'
end

local function as_list(cmd)
  if type(cmd) == 'string' then
    return vim.split(cmd, '%s+', { trimempty = true })
  end
  return vim.deepcopy(cmd)
end

--- The projects folder: the configured one, else $CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects.
function M.projects_dir()
  local dir = M.config.projects_dir
  if not dir or dir == '' then
    local home = os.getenv('CLAUDE_CONFIG_DIR')
    if not home or home == '' then
      home = (os.getenv('HOME') or '~') .. '/.claude'
    end
    dir = home .. '/projects'
  end
  return normalize(dir)
end

--- Is `path` a transcript (`*.jsonl`) inside the projects folder?
function M.is_transcript(path)
  if not path or path == '' or not path:match('%.jsonl$') then
    return false
  end
  local root = M.projects_dir()
  local p = normalize(path)
  return root ~= nil and p ~= nil and p:sub(1, #root + 1) == root .. '/'
end

--- The session a transcript path belongs to: `<id>.jsonl`, or `<id>/subagents/agent-*.jsonl`.
function M.session_id_of_path(path)
  if not path or path == '' then
    return nil
  end
  local base = vim.fn.fnamemodify(path, ':t:r')
  if base:match(UUID_PATTERN) then
    return base
  end
  local parent = vim.fn.fnamemodify(path, ':h:h:t')
  if vim.fn.fnamemodify(path, ':h:t') == 'subagents' and parent:match(UUID_PATTERN) then
    return parent
  end
  return nil
end

-- ---------------------------------------------------------------------------------------------
-- the client

local function get_clients()
  if vim.lsp.get_clients then
    return vim.lsp.get_clients()
  end
  return vim.lsp.get_active_clients()
end

local function is_stopped(client)
  return client:is_stopped() -- a closure ignoring its argument before 0.11, a method after
end

--- client.request before 0.11, client:request after.
local function client_request(client, method, params, handler, bufnr)
  if has_011 then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

local progress_handler -- defined below
local did_change_handler

--- The server asks before a tool the turn was not allowed up front runs: the command, or the edit
--- as a diff, with allow once / allow for this session / deny (no answer, or an error, denies).
--- The preview is shown whole, blank lines too: the server bounds it (and says so at its start), and
--- any line left out would still run.
local function confirm_permission(params)
  -- the folder is the session's recorded cwd (transcript data): kept on its line, a newline drawn ^@, an escape ^[
  local where = vim.fn.strtrans(tostring(params.cwd or '?'))
  local head = string.format('Claude wants to use %s in %s:', vim.fn.strtrans(tostring(params.tool or '?')), where)
  local message = head .. '\n\n' .. tostring(params.preview or '')
  local choice = vim.fn.confirm(message, '&Allow once\nAllow for this &session\n&Deny', 3)
  return ({ 'allow', 'allowSession', 'deny' })[choice] or 'deny'
end

local function permission_handler(_, params)
  local ask = M.config.permission_prompt or confirm_permission
  local ok, decision = pcall(ask, params or {})
  if not ok or (decision ~= 'allow' and decision ~= 'allowSession') then
    decision = 'deny'
  end
  return { decision = decision }
end

--- The server's initializationOptions (`stores` only when some are configured: an empty Lua table
--- would reach the server as an object).
function M.init_options(root)
  local opts = { projectsDir = root, watch = M.config.watch, polling = M.config.polling }
  if type(M.config.stores) == 'table' and #M.config.stores > 0 then
    opts.stores = M.config.stores
  end
  return opts
end

function M.client_config()
  local root = M.projects_dir()
  return {
    name = NAME,
    cmd = as_list(M.config.cmd),
    root_dir = root,
    init_options = M.init_options(root),
    get_language_id = function()
      return 'claude-transcript'
    end,
    handlers = {
      ['$/progress'] = function(...)
        return progress_handler(...)
      end,
      ['sessions/didChange'] = function(...)
        return did_change_handler(...)
      end,
      ['sessions/permission'] = function(...)
        return permission_handler(...)
      end,
    },
    on_attach = M.config.on_attach,
    capabilities = M.config.capabilities,
    flags = { debounce_text_changes = 150 },
  }
end

--- The running session-lsp client for the configured projects folder, if any.
function M.get_client()
  local root = M.projects_dir()
  for _, c in ipairs(get_clients()) do
    if c.name == NAME and c.config and c.config.root_dir == root and not is_stopped(c) then
      return c
    end
  end
  return nil
end

--- The client, started (without attaching a buffer) when needed.
function M.ensure_client()
  local client = M.get_client()
  if client then
    return client
  end
  if vim.fn.executable(as_list(M.config.cmd)[1]) ~= 1 then
    err('cannot run the server: ' .. tostring(as_list(M.config.cmd)[1]) .. ' is not executable (see setup({cmd=...}))')
    return nil
  end
  local id
  if has_011 then
    id = vim.lsp.start(M.client_config(), { attach = false })
  else
    id = vim.lsp.start_client(M.client_config())
  end
  return id and vim.lsp.get_client_by_id(id) or nil
end

--- Attach the server to a buffer (the current one by default). Returns the client id.
function M.attach(bufnr)
  if bufnr == nil or bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  end
  -- transcripts are append-only logs that Claude Code writes: follow them without prompting
  vim.api.nvim_buf_set_option(bufnr, 'autoread', true)
  if vim.lsp.start then
    local ok, id = pcall(vim.lsp.start, M.client_config(), { bufnr = bufnr })
    if ok then
      return id
    end
    err('could not start the server: ' .. tostring(id))
    return nil
  end
  local client = M.ensure_client()
  if not client then
    return nil
  end
  vim.lsp.buf_attach_client(bufnr, client.id)
  return client.id
end

--- Call fn(client) once the client is initialized (or report that it never came up).
local function with_client(fn)
  local client = M.ensure_client()
  if not client then
    return
  end
  if client.initialized then
    return fn(client)
  end
  local timer = uv.new_timer()
  local waited = 0
  timer:start(
    20,
    20,
    vim.schedule_wrap(function()
      waited = waited + 20
      if timer:is_closing() then
        return
      end
      if client.initialized then
        timer:stop()
        timer:close()
        fn(client)
      elseif is_stopped(client) or waited >= M.config.start_timeout then
        timer:stop()
        timer:close()
        err('the server did not start (see :lua vim.cmd("e " .. vim.lsp.get_log_path()))')
      end
    end)
  )
end

--- Send a request to the server; callback(err, result). Returns nothing; errors are reported.
function M.request(method, params, callback, bufnr)
  with_client(function(client)
    client_request(client, method, params or vim.empty_dict(), function(e, result)
      if callback then
        callback(e, result)
      elseif e then
        err(method .. ': ' .. tostring(e.message or vim.inspect(e)))
      end
    end, bufnr)
  end)
end

--- Send a request and wait for its answer (for scripts and tests). Returns result, err.
function M.request_sync(method, params, timeout)
  local done, res, e = false, nil, nil
  M.request(method, params, function(e2, r)
    done, res, e = true, r, e2
  end)
  vim.wait(timeout or 30000, function()
    return done
  end, 20)
  if not done then
    return nil, { message = 'timeout waiting for ' .. method }
  end
  return res, e
end

local function message_of(e)
  if type(e) == 'table' then
    return tostring(e.message or vim.inspect(e))
  end
  return tostring(e)
end

-- ---------------------------------------------------------------------------------------------
-- which session a command is about

local function our_search()
  local info = vim.fn.getqflist({ title = 1, context = 1, idx = 0 })
  local ctx = info.context
  if type(ctx) == 'table' and ctx.session_lsp_search then
    return info
  end
  return nil
end

local function in_loclist()
  local wi = vim.fn.getwininfo(vim.api.nvim_get_current_win())[1]
  return wi ~= nil and wi.loclist == 1
end

local function our_qf()
  local info = vim.fn.getqflist({ title = 1, context = 1, id = 0 })
  local ctx = info.context
  if type(ctx) == 'table' and ctx.session_lsp then
    return info
  end
  return nil
end

--- The session under the cursor in our quickfix list, if the cursor is there.
local function qf_selected()
  if vim.bo.buftype ~= 'quickfix' or in_loclist() then
    return nil
  end
  local info = our_qf()
  if not info then
    return nil
  end
  local id = info.context.ids[vim.fn.line('.')]
  return id and state.sessions[id] or (id and { sessionId = id }) or nil
end

--- The session named by `arg`, else the quickfix selection, else the current transcript buffer.
local function target_session(arg)
  if arg and arg ~= '' then
    return state.sessions[arg] or { sessionId = arg }
  end
  local sel = qf_selected()
  if sel then
    return sel
  end
  local path = vim.api.nvim_buf_get_name(0)
  local id = M.session_id_of_path(path)
  if id then
    return state.sessions[id] or { sessionId = id, path = normalize(path) }
  end
  return nil
end

--- The uuid of the row on the cursor's line of a transcript buffer.
local function uuid_at_cursor()
  local line = vim.api.nvim_get_current_line()
  local ok, row = pcall(vim.fn.json_decode, line)
  if ok and type(row) == 'table' and type(row.uuid) == 'string' then
    return row.uuid
  end
  return line:match('"uuid"%s*:%s*"([%x%-]+)"')
end

-- ---------------------------------------------------------------------------------------------
-- :Sessions

local function fmt_time(iso)
  iso = val(iso)
  if type(iso) ~= 'string' then
    return '?'
  end
  local d, t = iso:match('^(%d%d%d%d%-%d%d%-%d%d)T(%d%d:%d%d)')
  if d then
    return d .. ' ' .. t
  end
  return iso
end

local function one_line(s, max)
  s = tostring(s or ''):gsub('%s+', ' ')
  if max and #s > max then
    s = s:sub(1, max - 1) .. '…'
  end
  return s
end

--- Whether a sessions/list item's `field` is not known yet (a partial item: the server is still indexing).
function M.is_pending(s, field)
  for _, name in ipairs(val(s.pending) or {}) do
    if name == field then
      return true
    end
  end
  return false
end

--- The quickfix entry text of a session.
function M.format_session(s)
  local title = val(s.title) or s.sessionId
  local count = tonumber(val(s.messageCount))
  local parts = {
    one_line(title, 80),
    fmt_time(s.modified),
    (M.is_pending(s, 'messageCount') or not count) and '… messages' or string.format('%d messages', count),
  }
  local cwd = val(s.cwd)
  if cwd then
    table.insert(parts, cwd)
  end
  local subs = val(s.subagents)
  if type(subs) == 'table' and #subs > 0 then
    table.insert(parts, string.format('%d subagent(s)', #subs))
  end
  if type(val(s.forkedFrom)) == 'table' then
    table.insert(parts, 'fork of ' .. tostring(val(s.forkedFrom.sessionId) or '?'):sub(1, 8))
  end
  if val(s.store) then
    table.insert(parts, 'store ' .. tostring(s.store))
  end
  table.insert(parts, s.sessionId)
  return table.concat(parts, ' │ ')
end

--- Remember a sessions/list answer's sessions by id: the first of an id, the local folder's (listed before any
--- store's). Anyone who can write to a store picks its ids: with the last winning, :SessionResume on a local
--- transcript ran claude in the cwd the store's rows record.
function M.remember_sessions(sessions)
  local seen = {}
  for _, s in ipairs(sessions) do
    if type(s) == 'table' and type(s.sessionId) == 'string' and not seen[s.sessionId] then
      seen[s.sessionId] = true
      state.sessions[s.sessionId] = s
    end
  end
end

--- The session `id` as the last list gave it (nil if not listed).
function M.session_info(id)
  return state.sessions[id]
end

local function set_session_list(sessions, action, id)
  local items, ids = {}, {}
  M.remember_sessions(sessions)
  for _, s in ipairs(sessions) do
    -- a store session opens as its read-only `session-store:` document
    local file = val(s.uri) or s.path
    table.insert(items, { filename = file, lnum = 1, col = 1, text = M.format_session(s) })
    table.insert(ids, s.sessionId)
  end
  local what = { title = QF_TITLE, items = items, context = { session_lsp = true, ids = ids } }
  if id then
    what.id = id
  end
  vim.fn.setqflist({}, action, what)
end

--- :Sessions [cwd] -- the session list (of one working directory, if given) in the quickfix list.
function M.sessions(opts)
  opts = opts or {}
  -- partial: while the server's first index runs, sessions come at once with their counts pending
  local params = { projectsDir = M.projects_dir(), partial = true }
  if opts.cwd and opts.cwd ~= '' then
    params.cwd = normalize(opts.cwd) or opts.cwd
  end
  local changes = state.changes
  M.request('sessions/list', params, function(e, result)
    if e then
      return err('sessions/list: ' .. message_of(e))
    end
    local sessions = (result and val(result.sessions)) or {}
    state.list_partial = result ~= nil and val(result.partial) == true
    state.list_params = params
    set_session_list(sessions, ' ')
    if #sessions == 0 then
      notify('no sessions in ' .. tostring(params.cwd or params.projectsDir))
    end
    if M.config.open_quickfix then
      vim.cmd('copen')
      M._map_quickfix(vim.api.nvim_get_current_buf())
    end
    if opts.callback then
      opts.callback(sessions)
    end
    if state.list_partial and state.changes ~= changes then -- the index completed while this answer was on its way
      did_change_handler(nil, { sessionIds = {}, removed = {} })
    end
  end)
end

function M._map_quickfix(bufnr)
  if vim.bo[bufnr].buftype ~= 'quickfix' then
    return
  end
  vim.api.nvim_buf_set_keymap(bufnr, 'n', '<CR>', '', {
    noremap = true,
    silent = true,
    desc = 'session-lsp: open the session at its leaf',
    callback = function()
      if in_loclist() then
        vim.cmd('.ll') -- a location list: the usual jump
      elseif our_qf() then
        M.open_selected()
      elseif our_search() then
        M.open_search_hit()
      else
        vim.cmd('.cc') -- another quickfix list: the usual jump
      end
    end,
  })
end

--- Find the 0-based line of the session's leaf: where resume starts (the tree's `leafUuid`), else the leaf the
--- listing names, else the last row on the chain.
function M.leaf_line(session, callback)
  M.request('sessions/tree', { sessionId = session.sessionId }, function(e, tree)
    if e or not tree then
      return callback(nil, e)
    end
    local leaf = val(tree.leafUuid) or val(session.leafUuid)
    local last
    for _, node in ipairs(val(tree.nodes) or {}) do
      if leaf and node.uuid == leaf then
        return callback(node.line)
      end
      if val(node.onChain) then
        last = node.line
      end
    end
    callback(last)
  end)
end

--- Open a session's transcript with the cursor on its leaf row.
function M.open_session(session, callback)
  M.leaf_line(session, function(line)
    local path = val(session.path)
    if not path then
      return err('no path for session ' .. session.sessionId)
    end
    if vim.bo.buftype == 'quickfix' then
      vim.cmd('wincmd p')
      if vim.bo.buftype == 'quickfix' then
        vim.cmd('aboveleft split')
      end
    end
    vim.cmd('edit ' .. vim.fn.fnameescape(path))
    if line then
      local last = vim.api.nvim_buf_line_count(0)
      vim.api.nvim_win_set_cursor(0, { math.min(line + 1, last), 0 })
      vim.cmd('normal! zz')
    end
    if callback then
      callback(line)
    end
  end)
end

--- <CR> in the session list.
function M.open_selected()
  local s = qf_selected()
  if s then
    M.open_session(s)
  end
end

-- ---------------------------------------------------------------------------------------------
-- :SessionResume

local function find_session(session, callback)
  if val(session.cwd) then
    return callback(session)
  end
  M.request('sessions/list', { projectsDir = M.projects_dir() }, function(_, result)
    M.remember_sessions((result and val(result.sessions)) or {})
    callback(state.sessions[session.sessionId] or session)
  end)
end

--- :SessionResume [id] -- `claude --resume <id>` in a terminal buffer, in the session's working directory.
function M.resume(arg, callback)
  local target = target_session(arg)
  if not target then
    return err('no session here: give a session id, or run it from a transcript or the :Sessions list')
  end
  find_session(target, function(s)
    if val(s.storeId) or val(s.readOnly) == true then
      -- a store's session is not here to resume, and its cwd is whoever wrote to the store's choice
      return err('a session of a session store cannot be resumed here: pull it first')
    end
    local cwd = val(s.cwd)
    if not is_dir(cwd) then
      warn(string.format(
        "the session's working directory %s does not exist here; resuming in %s (claude may not find the session)",
        tostring(cwd),
        vim.fn.getcwd()
      ))
      cwd = vim.fn.getcwd()
    end
    local cmd = as_list(M.config.claude_cmd)
    vim.list_extend(cmd, { '--resume', s.sessionId })
    if vim.bo.buftype == 'quickfix' then
      vim.cmd('wincmd p')
    end
    vim.cmd(M.config.terminal_split)
    vim.cmd('enew')
    local job = vim.fn.termopen(cmd, { cwd = cwd })
    if job <= 0 then
      return err('could not run ' .. table.concat(cmd, ' '))
    end
    pcall(vim.api.nvim_buf_set_name, 0, string.format('claude://%s/%s', s.sessionId, job))
    vim.b.session_lsp_session = s.sessionId
    if M.config.terminal_insert then
      vim.cmd('startinsert')
    end
    if callback then
      callback(vim.api.nvim_get_current_buf(), job, cwd)
    end
  end)
end

-- ---------------------------------------------------------------------------------------------
-- :SessionFork

--- :SessionFork[!] [title] -- fork the session; in a transcript, at the row under the cursor
--- (with ! or elsewhere: the whole conversation). Opens the new transcript.
function M.fork(opts, callback)
  opts = opts or {}
  local target = target_session(opts.session)
  if not target then
    return err('no session here: run it from a transcript or the :Sessions list')
  end
  local params = { sessionId = target.sessionId }
  if not opts.bang and vim.bo.buftype == '' and M.session_id_of_path(vim.api.nvim_buf_get_name(0)) then
    params.atUuid = opts.at_uuid or uuid_at_cursor()
  elseif opts.at_uuid then
    params.atUuid = opts.at_uuid
  end
  if opts.title and opts.title ~= '' then
    params.title = opts.title
  end
  M.request('sessions/fork', params, function(e, result)
    if e or not result then
      return err('fork: ' .. message_of(e))
    end
    notify(string.format('forked %s into %s', target.sessionId, result.sessionId))
    if opts.open ~= false then
      M.open_session({ sessionId = result.sessionId, path = result.path }, function()
        if callback then
          callback(result)
        end
      end)
    elseif callback then
      callback(result)
    end
  end)
end

-- ---------------------------------------------------------------------------------------------
-- :SessionTurn

local function accumulate(sofar, message)
  if type(message) ~= 'string' or message == '' then
    return sofar
  end
  if sofar ~= '' and message:sub(1, #sofar) == sofar then
    return message
  end
  return sofar .. message
end

local function turn_render(turn)
  local buf = turn.buf
  if not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  local lines = vim.list_extend(vim.deepcopy(turn.header), vim.split(turn.text, '\n', { plain = true }))
  if turn.footer then
    vim.list_extend(lines, turn.footer)
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    pcall(vim.api.nvim_win_set_cursor, win, { #lines, 0 })
  end
end

progress_handler = function(e, result, ctx, config)
  local turn = result and state.turns[result.token]
  if not turn then
    local default = vim.lsp.handlers['$/progress']
    if default then
      return default(e, result, ctx, config)
    end
    return
  end
  local v = result.value or {}
  if v.kind == 'report' or v.kind == 'begin' then
    local msg = val(v.message)
    if v.kind == 'report' and msg then
      turn.text = accumulate(turn.text, msg)
      turn.reports = (turn.reports or 0) + 1
      if vim.api.nvim_buf_is_valid(turn.buf) then
        vim.b[turn.buf].session_lsp_reports = turn.reports
      end
      turn_render(turn)
    end
  end
end

did_change_handler = function(_, result)
  if not result then
    return
  end
  state.changes = state.changes + 1
  local changed = #(val(result.sessionIds) or {}) > 0 or #(val(result.removed) or {}) > 0
  local info = our_qf()
  -- the first index's end (no ids) fills in a partial list's counts
  if (changed or state.list_partial) and info then
    M.request('sessions/list', state.list_params or { projectsDir = M.projects_dir() }, function(e, res)
      if not e and res and our_qf() then
        state.list_partial = val(res.partial) == true
        set_session_list(val(res.sessions) or {}, 'r', info.id)
      end
    end)
  end
  local ids = {}
  for _, id in ipairs(val(result.sessionIds) or {}) do
    ids[id] = true
  end
  if changed then
    vim.schedule(function()
      M.reload_transcripts(ids)
      require('session_lsp.conversation').on_change(ids)
    end)
  end
end

--- Reload the unmodified transcript buffers (of the sessions in `ids`, a set; nil = all) that
--- changed on disk. Transcripts get a local 'autoread' when attached, so this does not prompt.
function M.reload_transcripts(ids)
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(b)
    if vim.api.nvim_buf_is_loaded(b) and not vim.bo[b].modified and M.is_transcript(name) then
      local id = M.session_id_of_path(name)
      if ids == nil or (id and ids[id]) then
        pcall(vim.cmd, 'silent! checktime ' .. b)
      end
    end
  end
end

--- :SessionTurn {prompt} -- run an agent turn in the session (of the current transcript or the
--- :Sessions selection; a new session in the current directory elsewhere), streaming the reply
--- into a scratch buffer.
function M.turn(prompt, opts, callback)
  opts = opts or {}
  if not prompt or prompt == '' then
    return err('usage: :SessionTurn {prompt}')
  end
  local target = opts.session and { sessionId = opts.session } or target_session(nil)
  state.next_token = state.next_token + 1
  local token = string.format('session-lsp-nvim-turn-%d-%d', uv.os_getpid(), state.next_token)
  local params = { prompt = prompt, workDoneToken = token }
  if target then
    params.sessionId = target.sessionId
  else
    params.cwd = vim.fn.getcwd()
  end
  params.provider = opts.provider or M.config.provider
  params.model = opts.model or M.config.model
  if M.config.ask_permission then
    params.askPermission = true
  end

  if vim.bo.buftype == 'quickfix' then
    vim.cmd('wincmd p')
  end
  vim.cmd(M.config.turn_split)
  vim.cmd('enew')
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = 'markdown'
  pcall(vim.api.nvim_buf_set_name, buf, string.format('session-turn://%d', state.next_token))
  local turn = {
    buf = buf,
    text = '',
    header = {
      '# ' .. one_line(prompt, 200),
      string.format('_%s · %s_', target and target.sessionId or 'new session', params.provider or 'default model'),
      '',
    },
  }
  state.turns[token] = turn
  turn_render(turn)
  M.request('sessions/runTurn', params, function(e, result)
    state.turns[token] = nil
    if e or not result then
      turn.footer = { '', '**error:** ' .. message_of(e) }
      turn_render(turn)
      err('runTurn: ' .. message_of(e))
      if callback then
        callback(nil, e, buf)
      end
      return
    end
    if type(val(result.text)) == 'string' then
      turn.text = result.text
    end
    local usage = val(result.usage)
    turn.footer = {
      '',
      string.format(
        '_session %s · %s row(s) appended%s_',
        tostring(val(result.sessionId)),
        tostring(val(result.appended) and (type(result.appended) == 'table' and #result.appended or result.appended) or 0),
        type(usage) == 'table'
            and string.format(' · %s in / %s out tokens', tostring(val(usage.input_tokens) or val(usage.inputTokens) or '?'),
              tostring(val(usage.output_tokens) or val(usage.outputTokens) or '?'))
          or ''
      ),
    }
    vim.b[buf].session_lsp_session = val(result.sessionId)
    turn_render(turn)
    if val(result.sessionId) then
      M.reload_transcripts({ [result.sessionId] = true })
    end
    if callback then
      callback(result, nil, buf)
    end
  end)
  return buf
end

-- ---------------------------------------------------------------------------------------------
-- :SessionConversation

--- :SessionConversation [id] -- the session (of the argument, the :Sessions selection or the
--- current transcript) as a conversation in a read-only buffer (see session_lsp/conversation.lua).
function M.conversation(arg, opts, callback)
  local target = target_session(arg)
  if not target then
    return err('no session here: give a session id, or run it from a transcript or the :Sessions list')
  end
  if vim.bo.buftype == 'quickfix' then
    vim.cmd('wincmd p')
  end
  return require('session_lsp.conversation').open(
    { sessionId = target.sessionId, path = val(target.path) },
    { split = (opts or {}).split or M.config.turn_split },
    callback
  )
end

-- ---------------------------------------------------------------------------------------------
-- :SessionSearch

local SYMBOL_FILE = 1 -- a session (its file); other kinds are messages in it

--- :SessionSearch WORDS -- sessions whose title or prompts hold the words, then every message that
--- holds them all (the server's full-text search, workspace/symbol), in the quickfix list; <CR>
--- opens the conversation at that message.
function M.search(query, opts)
  opts = opts or {}
  if not query or vim.trim(query) == '' then
    return err('give the words to search for')
  end
  M.request('workspace/symbol', { query = query }, function(e, result)
    if e then
      return err('workspace/symbol: ' .. message_of(e))
    end
    local items, hits = {}, {}
    for _, sym in ipairs(val(result) or {}) do
      local path = vim.uri_to_fname(sym.location.uri)
      local line = sym.location.range.start.line
      local session = sym.kind == SYMBOL_FILE
      local name = tostring(sym.name):gsub('%s+', ' ')
      table.insert(items, { filename = path, lnum = line + 1, col = 1, text = (session and 'session: ' or '') .. name })
      table.insert(hits, {
        path = path,
        line = line,
        session = session,
        sessionId = session and M.session_id_of_path(path) or val(sym.containerName) or M.session_id_of_path(path),
      })
    end
    local what = { title = 'Claude search: ' .. query, items = items, context = { session_lsp_search = true, hits = hits } }
    vim.fn.setqflist({}, ' ', what)
    if #items == 0 then
      notify('nothing found for ' .. query)
    end
    if M.config.open_quickfix then
      vim.cmd('copen')
      M._map_quickfix(vim.api.nvim_get_current_buf())
    end
    if opts.callback then
      opts.callback(hits)
    end
  end)
end

--- <CR> in the search results: the conversation of the hit's session, at the hit's message.
function M.open_search_hit(index, callback)
  local info = our_search()
  if not info then
    return
  end
  local hit = info.context.hits[index or (vim.bo.buftype == 'quickfix' and vim.fn.line('.') or info.idx)]
  if not hit then
    return
  end
  if vim.bo.buftype == 'quickfix' then
    vim.cmd('wincmd p')
  end
  return require('session_lsp.conversation').open(
    { sessionId = hit.sessionId or '', path = hit.path, at_line = (not hit.session) and hit.line or nil },
    { split = M.config.turn_split },
    callback
  )
end

-- ---------------------------------------------------------------------------------------------
-- setup

function M.create_commands()
  local cmd = vim.api.nvim_create_user_command
  cmd('Sessions', function(a)
    M.sessions({ cwd = a.args })
  end, { nargs = '?', complete = 'dir', desc = 'Claude Code sessions in the quickfix list' })
  cmd('SessionResume', function(a)
    M.resume(a.args)
  end, { nargs = '?', desc = 'claude --resume <session> in a terminal' })
  cmd('SessionFork', function(a)
    M.fork({ bang = a.bang, title = a.args })
  end, { nargs = '?', bang = true, desc = 'fork the session (at the cursor row; ! = whole conversation)' })
  cmd('SessionTurn', function(a)
    M.turn(a.args)
  end, { nargs = '+', desc = 'run an agent turn and stream the reply' })
  cmd('SessionConversation', function(a)
    M.conversation(a.args)
  end, { nargs = '?', desc = 'the session as a conversation (folds per tool call, H: hidden items)' })
  cmd('SessionSearch', function(a)
    M.search(a.args)
  end, { nargs = '+', desc = 'full-text search of every session; <CR> opens the conversation at the message' })
end

--- Fill a `session-store:` buffer with its text from the server, read-only, and attach the server.
function M.read_store_document(bufnr)
  local uri = vim.api.nvim_buf_get_name(bufnr)
  vim.api.nvim_buf_set_option(bufnr, 'buftype', 'nofile')
  vim.api.nvim_buf_set_option(bufnr, 'swapfile', false)
  M.request('sessions/storeDocument', { uri = uri }, function(e, result)
    if e or type(result) ~= 'table' then
      return err('sessions/storeDocument: ' .. message_of(e))
    end
    if not vim.api.nvim_buf_is_valid(bufnr) then
      return
    end
    local lines = vim.split(result.text or '', '\n', { plain = true })
    if lines[#lines] == '' then
      table.remove(lines)
    end
    vim.api.nvim_buf_set_option(bufnr, 'modifiable', true)
    vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, lines)
    vim.api.nvim_buf_set_option(bufnr, 'modifiable', false)
    vim.api.nvim_buf_set_option(bufnr, 'readonly', true)
    vim.api.nvim_buf_set_option(bufnr, 'modified', false)
    M.attach(bufnr)
  end)
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend('force', vim.deepcopy(defaults), opts or {})
  if opts and opts.cmd then
    M.config.cmd = opts.cmd -- lists are replaced, not merged
  end
  if opts and opts.claude_cmd then
    M.config.claude_cmd = opts.claude_cmd
  end
  if opts and opts.stores then
    M.config.stores = opts.stores
  end
  M.create_commands()
  local group = vim.api.nvim_create_augroup('session_lsp', { clear = true })
  if M.config.autostart then
    vim.api.nvim_create_autocmd('BufReadPost', {
      group = group,
      pattern = '*.jsonl',
      desc = 'session-lsp: attach to Claude Code transcripts',
      callback = function(a)
        if M.is_transcript(vim.api.nvim_buf_get_name(a.buf)) then
          M.attach(a.buf)
        end
      end,
    })
    -- transcripts opened before setup ran
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(b) and M.is_transcript(vim.api.nvim_buf_get_name(b)) then
        M.attach(b)
      end
    end
  end
  vim.api.nvim_create_autocmd('BufReadCmd', {
    group = group,
    pattern = 'session-store://*',
    desc = 'session-lsp: a store session, read-only, from the server',
    callback = function(a)
      M.read_store_document(a.buf)
    end,
  })
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = 'qf',
    callback = function(a)
      M._map_quickfix(a.buf)
    end,
  })
  state.setup_done = true
  return M
end

function M.is_setup()
  return state.setup_done
end

return M
