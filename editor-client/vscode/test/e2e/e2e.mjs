// Drives code-server (started by run.sh) in Debian's headless Chromium with playwright-core and checks the
// extension the way a person would use it. Prints "e2e: N passed, M failed"; exits 1 when any check failed.
import { chromium } from 'playwright-core';
import * as fs from 'node:fs';
import * as path from 'node:path';

const env = process.env;
const URL = env.E2E_URL;
const SHOTS = env.E2E_SCREENSHOTS;
const SERVER_OK = env.E2E_SERVER_OK === '1';
const EXTENSION_ONLY = env.E2E_EXTENSION_ONLY === '1';
const PROJECTS = env.E2E_PROJECTS;
const DAMAGED = env.E2E_DAMAGED;
const DAMAGED_LINE = Number(env.E2E_DAMAGED_LINE);
const SETTINGS = env.E2E_SETTINGS;
const MACHINE_SETTINGS = env.E2E_MACHINE_SETTINGS;
const PLANTED_MARK = env.E2E_PLANTED_MARK;
const PLANTED_STORE_MARK = env.E2E_PLANTED_STORE_MARK;
/** Where a setting is edited: the User settings, or the remote (Machine) ones, which alone hold `machine` settings
 * in a remote window such as code-server's. `marker` is text the file's editor shows once it has loaded. */
const USER = { file: SETTINGS, command: 'Preferences: Open User Settings (JSON)', marker: 'sessionLsp.projectsDir' };
const MACHINE = { file: MACHINE_SETTINGS, command: 'Preferences: Open Remote Settings (JSON)', marker: 'sessionLsp.serverCommand' };
const WORK = env.E2E_WORK;
const DAMAGED_TITLE = 'damaged copy (e2e)';
const TURN_SESSION = '1c99f271-c426-49f7-9ae1-2b8728ab22c4';
const TURN_PROMPT = 'hello from the e2e test';
const CONVO_SESSION = 'c0c0c0c0-0000-4000-8000-000000000001';
const CONVO_TITLE = 'And one more prompt.';
const AGENT_SESSION = '22222222-2222-4222-8222-222222222222';
const EXAMPLE = env.E2E_EXAMPLE;
const EXAMPLE_BUG_HUNT = '5b0e8c1a-3d7f-4a92-b6e4-1c9d2f7a8e35';
const EXAMPLE_BUG_TITLE = 'Missing cent when splitting an invoice';
const EXAMPLE_AUDIT = 'c7a41e96-0f28-4b3d-9e5a-62d8b1f4c09e';
const EXAMPLE_AUDIT_TITLE = 'Audit money rounding before merge';
const EXAMPLE_FORK_TITLE = 'Tax rounding half up (branch)';

const results = [];
let page;
let browser;

function log(msg) {
  console.log(`e2e: ${msg}`);
}

async function shot(name) {
  if (!page) return;
  try {
    await page.screenshot({ path: path.join(SHOTS, name) });
  } catch (e) {
    log(`screenshot ${name} failed: ${e.message}`);
  }
}

async function check(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    results.push({ name, ok: true });
    log(`ok   ${name} (${((Date.now() - t0) / 1000).toFixed(1)}s)`);
    return true;
  } catch (e) {
    results.push({ name, ok: false, error: e.message });
    log(`FAIL ${name}: ${e.message.split('\n')[0]}`);
    const slug = name.toLowerCase().replace(/[^a-z0-9]+/g, '-').slice(0, 50);
    if (WORK) {
      try {
        await page?.screenshot({ path: path.join(WORK, `fail-${slug}.png`) });
      } catch {}
    }
    return false;
  }
}

function skip(name, why) {
  log(`skip ${name}: ${why}`);
}

async function until(what, fn, timeout = 30000, interval = 250) {
  const end = Date.now() + timeout;
  let last;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, interval));
  }
  throw new Error(`timed out after ${timeout / 1000}s waiting for ${what}${last ? ` (${last.message.split('\n')[0]})` : ''}`);
}

const norm = (s) => (s ?? '').replace(/\s+/g, ' ').trim();

// ---- workbench helpers -----------------------------------------------------------------------------

const VIEW = '[id="workbench.view.extension.sessionLsp"]';

async function runCommand(title) {
  const input = page.locator('.quick-input-widget input');
  for (let attempt = 0; ; attempt++) {
    try {
      await page.keyboard.press('Escape');
      await page.keyboard.press('F1');
      await input.waitFor({ state: 'visible', timeout: 3000 });
      await input.fill(`>${title}`, { timeout: 3000 });
      break;
    } catch (e) {
      if (attempt >= 3) throw e;
      // Focus may be inside a webview, which keeps F1 to itself: focus the workbench and retry.
      await page.locator('.part.sidebar .composite.title').first().click().catch(() => undefined);
      await page.waitForTimeout(300);
    }
  }
  const row = page.locator('.quick-input-widget .monaco-list-row', { hasText: title }).first();
  await row.waitFor({ state: 'visible', timeout: 10000 });
  await page.keyboard.press('Enter');
}

async function searchSessions(query) {
  // Opens Search Sessions and types `query`. A conversation webview that takes the focus back just after the
  // previous check (it renders late) closes a quick pick, as VS Code closes one on focus loss: the pick is opened
  // again then (at most 3 times, each logged), never given up on silently.
  const input = page.locator('.quick-input-widget input');
  for (let attempt = 1; ; attempt++) {
    await runCommand('Claude Sessions: Search Sessions');
    // the command palette's own row also reads "Search Sessions": wait for the quick pick's placeholder
    await until('the Search Sessions quick pick', async () =>
      /every message as you type/.test((await input.getAttribute('placeholder').catch(() => '')) ?? ''),
    );
    try {
      await input.fill(query, { timeout: 5000 });
      return;
    } catch (e) {
      if (attempt >= 3) throw e;
      log(`the Search Sessions quick pick closed before "${query}" was typed (attempt ${attempt}); opening it again`);
    }
  }
}

async function viewRows() {
  return page.$$eval(`${VIEW} .monaco-list-row`, (rows) =>
    rows.map((r) => ({
      label: (r.querySelector('.label-name')?.textContent ?? '').trim(),
      description: (r.querySelector('.label-description')?.textContent ?? '').trim(),
      aria: r.getAttribute('aria-label') ?? '',
      expanded: r.getAttribute('aria-expanded'),
      level: Number(r.getAttribute('aria-level') ?? '0'),
    })),
  );
}

function viewRow(label) {
  return page.locator(`${VIEW} .monaco-list-row`).filter({
    has: page.locator('.label-name', { hasText: label }),
  });
}

async function notificationsText() {
  return page.$$eval('.notifications-toasts .notification-toast, .notifications-center .notification-list-item', (els) =>
    els.map((e) => e.textContent ?? '').join('\n'),
  );
}

async function openView() {
  const item = page.locator('.activitybar [aria-label^="Claude Sessions"]').first();
  await item.waitFor({ state: 'visible', timeout: 30000 });
  const container = page.locator(VIEW);
  if (!(await container.isVisible().catch(() => false))) {
    await item.click();
  }
  await container.waitFor({ state: 'visible', timeout: 15000 });
}

/** Edits settings the way a person would: in the settings.json editor of `where` (USER or MACHINE), then save. */
async function setSettings(patch, where = USER) {
  const cur = JSON.parse(fs.readFileSync(where.file, 'utf8'));
  const text = JSON.stringify({ ...cur, ...patch });
  await runCommand(where.command);
  const editor = page.locator('.monaco-editor .view-lines', { hasText: where.marker }).first();
  await editor.waitFor({ state: 'visible', timeout: 20000 });
  const edit = async () => {
    await editor.click();
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.press('Delete');
    await page.keyboard.insertText(text);
  };
  const saved = () => {
    try {
      return JSON.stringify(JSON.parse(fs.readFileSync(where.file, 'utf8'))) === JSON.stringify(JSON.parse(text));
    } catch {
      return false;
    }
  };
  for (let attempt = 0; !saved(); attempt++) {
    if (attempt >= 4) throw new Error(`settings.json was not saved: ${fs.readFileSync(where.file, 'utf8').slice(0, 300)}`);
    // typed again on each attempt: under load the editor can miss keys typed before it took focus
    await edit();
    await page.keyboard.press('ControlOrMeta+S');
    await until('settings.json to be saved', async () => saved(), 5000).catch(() => undefined);
  }
  await runCommand('View: Close All Editors');
}

async function webviewFrameWith(selector) {
  for (const f of page.frames()) {
    try {
      if (await f.$(selector)) return f;
    } catch {}
  }
  return undefined;
}

// ---- the run ---------------------------------------------------------------------------------------

async function main() {
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: env.E2E_HEADFUL !== '1',
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'],
  });
  const context = await browser.newContext({ viewport: { width: 1500, height: 900 } });
  page = await context.newPage();
  page.setDefaultTimeout(15000);

  const loaded = await check('code-server loads the workbench', async () => {
    await page.goto(URL, { waitUntil: 'domcontentloaded', timeout: 60000 });
    await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 60000 });
    await page.locator('.activitybar').waitFor({ state: 'visible', timeout: 60000 });
  });
  if (!loaded) return;

  await check('the extension activates and its "Claude Sessions" view appears', async () => {
    await openView();
    // A wider sidebar, so that the screenshots show whole session titles.
    const sash = await page.locator('.part.sidebar').boundingBox();
    if (sash) {
      const x = sash.x + sash.width + 1;
      await page.mouse.move(x, 400);
      await page.mouse.down();
      await page.mouse.move(x + 220, 400, { steps: 5 });
      await page.mouse.up();
    }
    await until('the sidebar title', async () => /Claude Sessions/.test(await page.locator('.part.sidebar .composite.title').innerText()));
  });

  await check('a wrong server command shows the "server missing" notification', async () => {
    const text = await until('the install notification', async () => {
      const t = await notificationsText();
      return /not installed or could not start/.test(t) ? t : undefined;
    });
    if (!/pip install/.test(text)) throw new Error(`notification lacks install instructions: ${norm(text)}`);
    await page.locator(VIEW, { hasText: 'not installed or could not start' }).waitFor({ state: 'visible', timeout: 30000 });
    await shot('01-server-missing.png');
  });

  await check('the "Session LSP" output channel logs the missing server', async () => {
    await page.locator('.notifications-toasts .notification-toast .monaco-button', { hasText: 'Show Output' }).first().click();
    await until('the output channel text', async () => {
      const t = (await page.locator('.part.panel').innerText()).replace(/\s+/g, '');
      return t.includes("servercommand'/nonexistent/session-lsp-missing'wasnotfound");
    });
    await shot('02-output-channel.png');
  });

  if (EXTENSION_ONLY) {
    skip('the checks that need the server', 'E2E_EXTENSION_ONLY=1');
    return;
  }
  if (!(await check('the session-lsp server answers initialize (probe)', async () => {
    if (!SERVER_OK) throw new Error(`${env.E2E_SERVER_CMD} serve --stdio did not answer initialize / sessions/list`);
  }))) {
    return;
  }
  const expected = JSON.parse(fs.readFileSync(path.join(WORK, 'expected-sessions.json'), 'utf8')).sessions;
  log(`server lists ${expected.length} sessions: ${expected.map((s) => norm(s.title) || s.sessionId).join(' | ')}`);

  /** A session that is a fork sits under its source: expand the source so its row shows. */
  async function expandSourceOf(title) {
    const byId = new Map(expected.map((s) => [s.sessionId, s]));
    const session = expected.find((s) => norm(s.title) === title);
    const source = session && session.forkedFrom ? byId.get(session.forkedFrom.sessionId) : undefined;
    if (!source) return;
    const row = viewRow(norm(source.title) || source.sessionId).first();
    if ((await row.getAttribute('aria-expanded')) !== 'true') {
      await row.locator('.monaco-tl-twistie').click();
    }
    await until(`${title} under its source`, async () => (await viewRows()).some((r) => norm(r.label) === title));
  }

  await check('changing the server setting restarts the server and the view lists the example sessions', async () => {
    await runCommand('Notifications: Clear All Notifications').catch(() => undefined);
    await setSettings({ 'sessionLsp.serverCommand': [env.E2E_SERVER_CMD, 'serve', '--stdio'] }, MACHINE);
    if (await page.locator('.part.panel').isVisible()) {
      await runCommand('View: Toggle Panel Visibility').catch(() => undefined);
    }
    await page.keyboard.press('Escape');
    const byId = new Map(expected.map((s) => [s.sessionId, s]));
    const roots = expected.filter((s) => !(s.forkedFrom && byId.has(s.forkedFrom.sessionId)));
    const want = roots.map((s) => norm(s.title) || s.sessionId);
    // 5 sessions: the corpus fork (d864acd2) and the damaged copy of 11111111 sit under it
    if (want.length < 3 || expected.length < 5) {
      throw new Error(`expected at least 5 sessions and 3 roots, server listed ${expected.length} and ${want.length}`);
    }
    await until(`the view to list ${want.join(', ')}`, async () => {
      const labels = (await viewRows()).map((r) => norm(r.label));
      return want.every((w) => labels.includes(w));
    }, 45000);
    // Forks sit under their source: expand the sources and look for them.
    const forks = expected.filter((s) => s.forkedFrom && byId.has(s.forkedFrom.sessionId));
    for (const f of forks) {
      const src = byId.get(f.forkedFrom.sessionId);
      const row = viewRow(norm(src.title) || src.sessionId).first();
      if ((await row.getAttribute('aria-expanded')) !== 'true') {
        await row.locator('.monaco-tl-twistie').click();
      }
      await until(`fork ${f.sessionId} under ${src.sessionId}`, async () => {
        const rows = await viewRows();
        const i = rows.findIndex((r) => norm(r.label) === (norm(src.title) || src.sessionId));
        return rows.slice(i + 1).some((r) => r.level > rows[i].level && norm(r.label) === (norm(f.title) || f.sessionId));
      });
    }
    // Subagents sit under their session.
    const withSubagents = expected.filter((s) => (s.subagents ?? []).length > 0);
    for (const s of withSubagents) {
      const row = viewRow(norm(s.title) || s.sessionId).first();
      // the view may refresh (sessions/didChange) and fold rows again: expand until it shows
      await until(`the subagent of ${s.sessionId}`, async () => {
        if ((await row.getAttribute('aria-expanded')) === 'false') {
          await row.locator('.monaco-tl-twistie').click().catch(() => undefined);
        }
        return (await viewRows()).some((r) => /subagent/.test(r.label) && r.description === s.subagents[0].agentId);
      });
    }
    // a listing that came partial (counts pending, "… msgs") is listed again when the index is ready
    await until('every session row counted', async () =>
      (await viewRows()).filter((r) => /\b\d+ msgs?\b/.test(r.description)).length >= want.length);
    const rows = await viewRows();
    const described = rows.filter((r) => /msg/.test(r.description));
    if (described.length < want.length) throw new Error(`session rows lack "N msgs" descriptions: ${JSON.stringify(rows)}`);
    if (rows.some((r) => /undefined|null|NaN/.test(r.description ?? ""))) throw new Error(`a row describes a missing field: ${JSON.stringify(rows)}`);
    log(`view rows: ${rows.map((r) => `${'  '.repeat(Math.max(0, r.level - 1))}${r.label} — ${r.description}`).join(' / ')}`);
    await shot('03-sessions-view.png');
  });

  await check("a workspace's .vscode/settings.json and the User settings cannot choose the program it starts", async () => {
    // Both name a planted program (run.sh) while the server runs from the remote (Machine) settings: it never ran.
    if (!PLANTED_MARK) throw new Error('E2E_PLANTED_MARK not set');
    if (fs.existsSync(PLANTED_MARK)) throw new Error(`the planted server command ran (${PLANTED_MARK} exists)`);
    const ws = JSON.parse(fs.readFileSync(path.join(WORK, 'workspace', '.vscode', 'settings.json'), 'utf8'));
    if (!String(ws['sessionLsp.serverCommand']?.[0] ?? '').includes('planted')) throw new Error('the workspace names no planted program');
  });

  await check("a workspace's .vscode/settings.json cannot choose a session store (where the database password goes)", async () => {
    // The workspace names a stand-in PostgreSQL server (run.sh) that asks for the password in clear text: libpq
    // would send it PGPASSWORD, the team database's. The server has been running a while; give a store time to open.
    if (!PLANTED_STORE_MARK) throw new Error('E2E_PLANTED_STORE_MARK not set');
    const ws = JSON.parse(fs.readFileSync(path.join(WORK, 'workspace', '.vscode', 'settings.json'), 'utf8'));
    if (!String(ws['sessionLsp.stores']?.[0] ?? '').startsWith('postgresql://')) throw new Error('the workspace names no store');
    await new Promise((r) => setTimeout(r, 8000));
    if (fs.existsSync(PLANTED_STORE_MARK)) {
      throw new Error(`the server connected to the workspace's store: ${norm(fs.readFileSync(PLANTED_STORE_MARK, 'utf8'))}`);
    }
  });

  await check('a damaged transcript shows its diagnostic in the Problems panel', async () => {
    await expandSourceOf(DAMAGED_TITLE);
    await viewRow(DAMAGED_TITLE).first().click();
    await until('the damaged transcript editor', async () => (await page.title()).includes(path.basename(DAMAGED)));
    await runCommand('View: Focus Problems (Errors, Warnings, Infos)').catch(() => runCommand('Problems: Focus on Problems View'));
    const want = `Ln ${DAMAGED_LINE + 1}`;
    const text = await until(`a problem at line ${DAMAGED_LINE + 1} of ${path.basename(DAMAGED)}`, async () => {
      const rows = await page.$$eval('.markers-panel .monaco-list-row', (rs) => rs.map((r) => r.textContent ?? ''));
      const hit = rows.find((t) => t.includes(want));
      return hit;
    });
    log(`problem: ${norm(text)}`);
    await shot('04-problems.png');
  });

  await check('hover on a transcript row shows the row', async () => {
    await viewRow('named session').first().click();
    await until('the named session transcript', async () => (await page.title()).includes(TURN_SESSION));
    // Go to the first prompt ("hello from another project", line 5) and ask for the hover there.
    await runCommand('Go to Line/Column...');
    await page.keyboard.type('5:20');
    await page.keyboard.press('Enter');
    await runCommand('Show or Focus Hover');
    const hover = await until('a hover with text', async () => {
      const h = page.locator('.monaco-hover:visible .monaco-hover-content, .monaco-hover:visible .hover-contents').first();
      const t = norm(await h.innerText());
      return t.length > 0 ? t : undefined;
    }, 20000);
    log(`hover: ${hover.slice(0, 300)}`);
    await page.waitForTimeout(800); // let the hover finish fading in for the screenshot
    if (!/user|hello from another project|ccfb4ee8/i.test(hover)) {
      throw new Error(`the hover does not describe the row: ${hover.slice(0, 300)}`);
    }
    await shot('05-hover.png');
    await page.keyboard.press('Escape');
  });

  await check('code lenses show and go to definition follows a parentUuid', async () => {
    // The named session's transcript is open from the hover check.
    await page.locator('.codelens-decoration', { hasText: 'Fork here' }).first().waitFor({ state: 'visible', timeout: 20000 });
    await runCommand('Go to Line/Column...');
    await page.keyboard.type('6:25'); // inside the parentUuid of line 6, which names the row on line 5
    await page.keyboard.press('Enter');
    await runCommand('Go to Definition');
    await until('the cursor on line 5', async () => /Ln 5,/.test(await page.locator('.statusbar').innerText()));
  });

  await check('Run Agent Turn (anthropic provider, pointed at the scripted test model) appends to the transcript and the view updates', async () => {
    const file = path.join(PROJECTS, '-Users-me-other', `${TURN_SESSION}.jsonl`);
    const before = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).length;
    const rowBefore = (await viewRows()).find((r) => norm(r.label) === 'named session');
    if (!rowBefore) throw new Error('no "named session" row in the view');
    if (await page.locator('.part.panel').isVisible()) {
      await runCommand('View: Toggle Panel Visibility').catch(() => undefined);
    }
    await page.locator('.monaco-editor .view-lines').first().click();
    await runCommand('Claude Sessions: Run Agent Turn');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible' });
    await input.fill(TURN_PROMPT);
    await page.keyboard.press('Enter');
    const frame = await until('the agent turn panel', () => webviewFrameWith('#reply'), 20000);
    let streamed = '';
    const status = await until('the turn to finish', async () => {
      const s = norm(await frame.locator('#status').innerText());
      if (/^(Done|Failed|Cancelled)/.test(s)) return s;
      streamed = streamed || norm(await frame.locator('#reply').innerText());
      return undefined;
    }, 60000, 100);
    log(`reply while running: ${streamed ? JSON.stringify(streamed.slice(0, 80)) : '(nothing seen before the end)'}`);
    const reply = norm(await frame.locator('#reply').innerText());
    log(`turn: ${status}; reply: ${reply.slice(0, 200)}`);
    if (!status.startsWith('Done')) throw new Error(`turn did not succeed: ${status}`);
    if (!reply) throw new Error('the panel shows no reply');
    const lines = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean);
    if (lines.length <= before) throw new Error(`transcript did not grow (${before} -> ${lines.length} rows)`);
    if (!lines.slice(before).some((l) => l.includes(TURN_PROMPT))) throw new Error('appended rows lack the prompt');
    await until(`the view row to change from "${rowBefore.description}"`, async () => {
      const r = (await viewRows()).find((x) => norm(x.label) === 'named session');
      return r && r.description !== rowBefore.description;
    }, 20000);
    const rowAfter = (await viewRows()).find((r) => norm(r.label) === 'named session');
    log(`view row: "${rowBefore.description}" -> "${rowAfter.description}"`);
    await shot('06-agent-turn.png');
  });

  await check('an agent turn asks before Bash runs; Deny is recorded as the CLI records a No', async () => {
    const file = path.join(PROJECTS, '-Users-me-other', `${TURN_SESSION}.jsonl`);
    const before = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).length;
    await page.locator('.monaco-editor .view-lines').first().click();
    await runCommand('Claude Sessions: Run Agent Turn');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible' });
    await input.fill('BASH touch should-not-exist');
    await page.keyboard.press('Enter');
    const dialog = page.locator('.monaco-dialog-box');
    await dialog.waitFor({ state: 'visible', timeout: 60000 });
    const asked = norm(await dialog.innerText());
    log(`permission dialog: ${asked.slice(0, 160)}`);
    if (!asked.includes('Claude wants to run a command (Bash)')) throw new Error(`unexpected dialog: ${asked}`);
    if (!asked.includes('touch should-not-exist')) throw new Error('the dialog does not show the command');
    await shot('14-permission.png');
    await dialog.getByRole('button', { name: 'Deny' }).click();
    const frame = await until('the agent turn panel', () => webviewFrameWith('#reply'), 20000);
    const status = await until('the turn to finish', async () => {
      const s = norm(await frame.locator('#status').innerText());
      return /^(Done|Failed|Cancelled)/.test(s) ? s : undefined;
    }, 60000, 100);
    if (!status.startsWith('Done')) throw new Error(`turn did not end cleanly: ${status}`);
    const added = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).slice(before).map((l) => JSON.parse(l));
    const texts = added.flatMap((r) => (Array.isArray(r.message?.content) ? r.message.content : []));
    if (!texts.some((b) => b.type === 'tool_result' && b.is_error && String(b.content).includes("doesn't want to proceed")))
      throw new Error('no rejected tool result recorded');
    if (!texts.some((b) => b.type === 'text' && b.text === '[Request interrupted by user for tool use]'))
      throw new Error('no interruption recorded');
  });

  // ---- the conversation panel ----------------------------------------------------------------
  const convoFile = path.join(PROJECTS, '-tmp-slsp-convo-work', `${CONVO_SESSION}.jsonl`);
  const convoRows = () => fs.readFileSync(convoFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  let chat;
  const visibleCount = (sel) => chat.locator(sel).evaluateAll((els) => els.filter((e) => e.offsetParent !== null).length);

  async function openConversationOf(title, fileId) {
    await runCommand('View: Close All Editors');
    if (await page.locator('.part.panel').isVisible()) {
      await runCommand('View: Toggle Panel Visibility').catch(() => undefined);
    }
    await expandSourceOf(title);
    await viewRow(title).first().click();
    await until(`the ${title} transcript`, async () => (await page.title()).includes(fileId));
    await runCommand('Claude Sessions: Open Conversation');
    return until('the conversation panel', async () => {
      for (const f of page.frames()) {
        try {
          if ((await f.locator('#chat .msg').count()) > 0) return f;
        } catch {}
      }
      return undefined;
    }, 30000);
  }

  await check('Open Conversation shows the session as a chat: replies, folded tool calls, no hidden rows', async () => {
    chat = await openConversationOf(CONVO_TITLE, CONVO_SESSION);
    const users = await chat.locator('.msg.user:visible .md').allInnerTexts();
    const want = ['READ notes.txt', 'EDIT /tmp/slsp-convo/work/notes.txt', 'WRITE /tmp/slsp-convo/work/hello.txt', 'Another way, please.', CONVO_TITLE];
    if (JSON.stringify(users.map(norm)) !== JSON.stringify(want)) throw new Error(`prompts shown: ${JSON.stringify(users)}`);
    const tools = await chat.locator('details.tool > summary .tool-name').allInnerTexts();
    if (tools.join(',') !== 'Read,Edit,Write') throw new Error(`tool calls: ${tools.join(',')}`);
    const open = await chat.locator('details.tool[open]').count();
    if (open !== 0) throw new Error(`${open} tool calls unfolded at first`);
    const hidden = await visibleCount('.hidden-item');
    if (hidden !== 0) throw new Error(`${hidden} hidden items visible`);
    const heads = norm(await chat.locator('.msg.assistant .head').last().innerText());
    if (!/Claude.*claude-opus-5-5.*in [\d,]+ · out \d+.*line 82/.test(heads)) throw new Error(`reply header: ${heads}`);
    log(`chat: ${users.length} prompts, ${tools.length} tool calls, last reply header "${heads}"`);
  });

  await check('a tool call unfolds into its diff and folds again', async () => {
    const edit = chat.locator('details.tool', { has: chat.locator('.tool-name', { hasText: 'Edit' }) }).first();
    await edit.locator('summary').click();
    await until('the Edit call to unfold', async () => (await edit.getAttribute('open')) !== null);
    const added = await edit.locator('.dl.add .tx').allInnerTexts();
    const removed = await edit.locator('.dl.del .tx').allInnerTexts();
    if (added.join('|') !== '+TWO|+three' || removed.join('|') !== '-two') throw new Error(`diff: +${added} -${removed}`);
    const write = chat.locator('details.tool', { has: chat.locator('.tool-name', { hasText: 'Write' }) }).first();
    await write.locator('summary').click();
    await until('the Write call to unfold', async () => (await write.getAttribute('open')) !== null);
    await edit.scrollIntoViewIfNeeded();
    await page.waitForTimeout(300);
    await shot('07-conversation.png');
    await write.locator('summary').click();
    await until('the Write call to fold', async () => (await write.getAttribute('open')) === null);
    if (await write.locator('.diff').isVisible()) throw new Error('a folded call still shows its diff');
  });

  await check('"What the model saw" shows the hidden rows and the API form', async () => {
    const onChain = convoRows().filter((r) => r.type === 'attachment').length;
    await chat.locator('#hidden').check();
    await until('hidden items to show', async () => (await visibleCount('.hidden-item')) > 0);
    await chat.locator('details.apiform').waitFor({ state: 'visible', timeout: 20000 });
    const shown = await visibleCount('.hidden-item');
    const api = norm(await chat.locator('details.apiform > summary').innerText());
    log(`hidden items shown: ${shown} (the file has ${onChain} attachment rows); ${api}`);
    if (!/What the model saw on resume: \d+ messages/.test(api)) throw new Error(`api form: ${api}`);
    await chat.locator('details.apiform > summary').click();
    await chat.locator('.hidden-item').first().scrollIntoViewIfNeeded();
    await page.waitForTimeout(300);
    await shot('11-conversation-hidden.png');
    await chat.locator('#hidden').uncheck();
    await until('hidden items to go', async () => (await visibleCount('.hidden-item')) === 0);
  });

  await check('the panel follows the session live (sessions/didChange)', async () => {
    const rows = convoRows();
    const leaf = rows.filter((r) => r.type === 'assistant').pop();
    const row = {
      parentUuid: leaf.uuid, isSidechain: false, type: 'user', promptId: 'e2e00000-0000-4000-8000-000000000000',
      message: { role: 'user', content: 'live prompt from the e2e' }, uuid: 'e2e00000-0000-4000-8000-000000000001',
      timestamp: new Date().toISOString(), userType: 'external', entrypoint: 'sdk-cli', cwd: '/tmp/slsp-convo/work',
      sessionId: CONVO_SESSION, version: '2.1.328',
    };
    fs.appendFileSync(convoFile, JSON.stringify(row) + '\n');
    await until('the new prompt in the panel', async () => (await chat.locator('.msg.user', { hasText: 'live prompt from the e2e' }).count()) === 1, 30000);
  });

  await check('the branch switcher shows the rewound branch with its thinking and image', async () => {
    const other = chat.locator('.branch-btn:not(.current)').first();
    const label = norm(await other.innerText());
    await other.click();
    await until('the other branch', async () => (await chat.locator('details.thinking').count()) === 1, 20000);
    if ((await chat.locator('.msg.user', { hasText: 'Another way, please.' }).count()) !== 0) throw new Error('the old branch still shows');
    const img = chat.locator('.msg.user img.img').first();
    await img.waitFor({ state: 'visible' });
    const src = await img.getAttribute('src');
    if (!src.startsWith('data:image/png;base64,')) throw new Error(`image src: ${src.slice(0, 40)}`);
    await chat.locator('details.thinking > summary').click();
    await chat.locator('details.thinking').scrollIntoViewIfNeeded();
    await until('the thinking to unfold', async () => /The user asks about the weather/.test(await chat.locator('details.thinking').innerText()));
    const current = norm(await chat.locator('.branch-btn.current').innerText());
    log(`switched to "${label}"; current: "${current}"`);
    await page.waitForTimeout(300);
    await shot('12-conversation-branch.png');
  });

  await check('a click on a message reveals its line in the transcript', async () => {
    // on the branch now shown: the prompt with the image
    await chat.locator('.msg.user', { hasText: 'What colour is this square?' }).locator('.head').click();
    const line = convoRows().findIndex((r) => r.type === 'user' && JSON.stringify(r.message?.content ?? '').includes('What colour is this square?')) + 1;
    await until(`the cursor on line ${line}`, async () => new RegExp(`Ln ${line},`).test(await page.locator('.statusbar').innerText()), 20000);
    if (!(await page.title()).includes(CONVO_SESSION)) throw new Error(`active editor: ${await page.title()}`);
  });

  await check('a subagent call expands into the subagent conversation', async () => {
    chat = await openConversationOf(`ORACLE ${AGENT_SESSION}`, AGENT_SESSION);
    const agent = chat.locator('details.tool', { has: chat.locator('.tool-name', { hasText: 'Agent' }) }).first();
    await agent.locator('summary').first().click();
    const sub = agent.locator('details.subagent');
    await sub.locator('summary').click();
    await until('the subagent conversation', async () => (await sub.locator('.subagent-body .msg').count()) > 0, 20000);
    const inner = await sub.locator('.subagent-body details.tool .tool-name').allInnerTexts();
    if (!inner.includes('Read')) throw new Error(`subagent tool calls: ${inner}`);
    if ((await chat.locator('.msg.compaction').count()) !== 1) throw new Error('no compaction separator');
    await agent.scrollIntoViewIfNeeded();
    await page.waitForTimeout(300);
    await shot('13-conversation-subagent.png');
  });

  await check('Search Sessions finds a session by a prompt', async () => {
    await searchSessions('audit.ts');
    await until('a prompt match', async () =>
      (await page.locator('.quick-input-widget .monaco-list-row').count()) > 0 &&
      /audit\.ts/.test(await page.locator('.quick-input-widget .monaco-list-row').first().innerText()),
    20000);
    await page.waitForTimeout(500);
    await shot('08-search.png');
    await page.keyboard.press('Enter');
    const { text, inView } = await conversationAt(/audit\.ts/);
    log(`search opened the conversation at: ${text.slice(0, 120)}`);
    if (!inView) throw new Error('the highlighted message is not in view');
  });

  await check('a full-text hit in Search Sessions (a tool call) opens the conversation at it, the call unfolded', async () => {
    await searchSessions('sub task audit');
    const hit = page.locator('.quick-input-widget .monaco-list-row', { hasText: 'tool: Agent sub task READ' }).first();
    await hit.waitFor({ state: 'visible', timeout: 20000 });
    await hit.click();
    const { frame, text, inView } = await conversationAt(/Agent\s*sub task/);
    if (!inView) throw new Error('the highlighted call is not in view');
    if ((await frame.locator('.msg.at details.tool[open]').count()) !== 1) throw new Error('the call found is not unfolded');
    log(`full-text hit opened the conversation at: ${text.slice(0, 80)}`);
  });

  await check('a full-text hit in Go to Symbol in Workspace opens the conversation at it, on its branch', async () => {
    await runCommand('View: Close All Editors');
    await runCommand('Go to Symbol in Workspace...');
    const input = page.locator('.quick-input-widget input');
    await input.fill('#colour square');
    const row = page.locator('.quick-input-widget .monaco-list-row', { hasText: 'What colour is this square?' }).first();
    await row.waitFor({ state: 'visible', timeout: 20000 });
    await row.click();
    const { frame, text, inView } = await conversationAt(/What colour is this square\?/);
    if (!inView) throw new Error('the highlighted message is not in view');
    // the prompt is on the rewound branch (the one starting "THINK the weather"): the panel shows that branch
    const current = norm(await frame.locator('.branch-btn.current').first().innerText());
    if (!/THINK the weather/.test(current)) throw new Error(`branch shown: ${current}`);
    if ((await frame.locator('.msg.user', { hasText: 'Another way, please.' }).count()) !== 0) throw new Error('the default branch shows');
    if (/\.jsonl|claude-conversation/.test(await page.title())) throw new Error(`an editor opened too: ${await page.title()}`);
    log(`workspace symbol opened the conversation at: ${text.slice(0, 80)}; branch "${current}"`);
    await page.waitForTimeout(300);
    await shot('15-search-conversation.png');
  });

  /** The conversation panel whose highlighted message (opened at by a search) matches `re`. */
  async function conversationAt(re) {
    const frame = await until('the conversation at the message', async () => {
      for (const f of page.frames()) {
        try {
          const at = f.locator('.msg.at');
          if ((await at.count()) === 1 && re.test(await at.innerText())) return f;
        } catch {}
      }
      return undefined;
    }, 30000);
    const at = frame.locator('.msg.at');
    const inView = await until('the message to scroll into view', () =>
      at.evaluate((el) => {
        const r = el.getBoundingClientRect();
        return r.top >= 0 && r.top < window.innerHeight && r.height > 0;
      }),
    10000).catch(() => false);
    return { frame, text: norm(await at.innerText()), inView };
  }

  await check('Fork Session forks the transcript in the editor and the fork appears in the view', async () => {
    await viewRow('named session').first().click();
    await until('the named session transcript', async () => (await page.title()).includes(TURN_SESSION));
    await page.locator('.monaco-editor .view-lines').first().click();
    await runCommand('Claude Sessions: Fork Session');
    const rows = page.locator('.quick-input-widget .monaco-list-row');
    await rows.filter({ hasText: 'Fork the whole session' }).first().waitFor({ state: 'visible' });
    await rows.filter({ hasText: 'Fork the whole session' }).first().click();
    const input = page.locator('.quick-input-widget input');
    await until('the title input', async () => /Title for the new session/.test(await page.locator('.quick-input-widget').innerText()));
    await input.fill('e2e fork');
    await page.keyboard.press('Enter');
    // a fork sits under its source in the view
    await until('the fork in the view', async () => {
      const source = viewRow('named session').first();
      if ((await source.getAttribute('aria-expanded')) === 'false') {
        await source.locator('.monaco-tl-twistie').click().catch(() => undefined);
      }
      return (await viewRows()).some((r) => norm(r.label) === 'e2e fork');
    }, 20000);
    await until('the fork transcript to open', async () => {
      const t = await page.title();
      return /\.jsonl/.test(t) && !t.includes(TURN_SESSION);
    });
    const forkFile = fs
      .readdirSync(path.join(PROJECTS, '-Users-me-other'))
      .filter((f) => f.endsWith('.jsonl') && !f.startsWith(TURN_SESSION));
    if (forkFile.length !== 1) throw new Error(`expected one new transcript, found ${forkFile.join(', ')}`);
    await shot('09-fork.png');
  });

  await check('Resume in Terminal runs claude --resume with the validated id', async () => {
    await viewRow('named session').first().click();
    await until('the named session transcript', async () => (await page.title()).includes(TURN_SESSION));
    await runCommand('Claude Sessions: Resume in Terminal');
    // /Users/me/other does not exist here: the extension says so and resumes in the workspace folder.
    await until('the missing-directory warning', async () => /does not exist here/.test(await notificationsText()));
    const record = path.join(WORK, 'claude-invocations.txt');
    const ran = await until('claude --resume to run in the terminal', async () =>
      fs.existsSync(record) ? fs.readFileSync(record, 'utf8').trim() : undefined,
    20000);
    log(`terminal ran: claude ${ran}`);
    if (ran !== `${path.join(WORK, 'workspace')} --resume ${TURN_SESSION}`) throw new Error(`unexpected invocation: ${ran}`);
    await page.waitForTimeout(500);
    await shot('10-resume-terminal.png');
  });

  await check('Copy Session ID copies the id', async () => {
    await runCommand('Notifications: Clear All Notifications').catch(() => undefined);
    await viewRow('named session').first().click();
    await runCommand('Claude Sessions: Copy Session ID');
    await until('the confirmation', async () => (await notificationsText()).includes(`Copied session id ${TURN_SESSION}`));
  });

  // ---- the bundled example (examples/projects): the README's screenshots -------------------------
  if (!EXAMPLE) {
    skip('the bundled example', 'E2E_EXAMPLE not set');
    return;
  }
  await check('the bundled example lists a bug hunt and an audit, with its fork and its subagent', async () => {
    await runCommand('Notifications: Clear All Notifications').catch(() => undefined);
    await runCommand('View: Close All Editors');
    await setSettings({ 'sessionLsp.projectsDir': EXAMPLE });
    await until('the example sessions in the view', async () => {
      const labels = (await viewRows()).map((r) => norm(r.label));
      return labels.includes(EXAMPLE_BUG_TITLE) && labels.includes(EXAMPLE_AUDIT_TITLE) && !labels.includes('named session');
    }, 45000);
    const audit = viewRow(EXAMPLE_AUDIT_TITLE).first();
    await until('the fork and the subagent under the audit', async () => {
      if ((await audit.getAttribute('aria-expanded')) === 'false') {
        await audit.locator('.monaco-tl-twistie').click().catch(() => undefined);
      }
      const rows = await viewRows();
      return rows.some((r) => norm(r.label) === EXAMPLE_FORK_TITLE && r.level === 3) && rows.some((r) => /subagent/.test(r.label) && r.level === 3);
    });
    const rows = await viewRows();
    log(`example rows: ${rows.map((r) => `${'  '.repeat(Math.max(0, r.level - 1))}${r.label} — ${r.description}`).join(' / ')}`);
    if (rows.filter((r) => r.level === 2).length !== 2) throw new Error(`expected 2 sessions under the project: ${JSON.stringify(rows)}`);
    if (await page.locator('.part.panel').isVisible()) {
      await runCommand('View: Toggle Panel Visibility').catch(() => undefined);
    }
    await viewRow(EXAMPLE_BUG_TITLE).first().click();
    await until('the bug hunt transcript', async () => (await page.title()).includes(EXAMPLE_BUG_HUNT));
    await page.waitForTimeout(1000); // let the transcript's highlighting settle for the screenshot
    await shot('example-1-sessions.png');
  });

  await check('the example bug hunt reads as one chat: the fix as a diff, the test runs, the compaction', async () => {
    chat = await openConversationOf(EXAMPLE_BUG_TITLE, EXAMPLE_BUG_HUNT);
    const tools = await chat.locator('details.tool > summary .tool-name').allInnerTexts();
    if (tools.join(',') !== 'Grep,Read,Bash,Edit,Bash,Read,Edit,Bash') throw new Error(`tool calls: ${tools.join(',')}`);
    if ((await chat.locator('.msg.compaction').count()) !== 1) throw new Error('no compaction separator');
    const calls = chat.locator('details.tool');
    const firstRun = calls.nth(2);
    const fix = calls.nth(3);
    await firstRun.locator('summary').first().click();
    await fix.locator('summary').first().click();
    await until('the fix to unfold', async () => (await fix.getAttribute('open')) !== null);
    const added = await fix.locator('.dl.add .tx').allInnerTexts();
    if (!added.some((t) => t.includes('share, rest = divmod(total_cents, parts)'))) throw new Error(`diff adds: ${added.join(' | ')}`);
    if (!/FAILED \(failures=1\)/.test(await firstRun.innerText())) throw new Error('the first test run does not show its failure');
    await firstRun.scrollIntoViewIfNeeded();
    await page.waitForTimeout(300);
    await shot('example-2-bug-hunt.png');
    await chat.locator('.msg.compaction').first().scrollIntoViewIfNeeded();
    await page.waitForTimeout(300);
    await shot('example-3-compaction.png');
  });

  await check('the example audit unfolds its Agent call into the subagent conversation', async () => {
    chat = await openConversationOf(EXAMPLE_AUDIT_TITLE, EXAMPLE_AUDIT);
    const agent = chat.locator('details.tool', { has: chat.locator('.tool-name', { hasText: 'Agent' }) }).first();
    await agent.locator('summary').first().click();
    const sub = agent.locator('details.subagent');
    await sub.locator('summary').click();
    await until('the subagent conversation', async () => (await sub.locator('.subagent-body .msg').count()) > 0, 20000);
    const inner = await sub.locator('.subagent-body details.tool .tool-name').allInnerTexts();
    if (inner.join(',') !== 'Grep,Read') throw new Error(`subagent tool calls: ${inner}`);
    await agent.scrollIntoViewIfNeeded();
    await page.waitForTimeout(300);
    await shot('example-4-subagent.png');
  });
}

try {
  await main();
} catch (e) {
  results.push({ name: 'e2e driver', ok: false, error: e.message });
  log(`FAIL e2e driver: ${e.stack}`);
} finally {
  await browser?.close().catch(() => undefined);
}
const passed = results.filter((r) => r.ok).length;
const failed = results.length - passed;
for (const r of results.filter((x) => !x.ok)) {
  log(`failed: ${r.name}: ${r.error}`);
}
console.log(`e2e: ${passed} passed, ${failed} failed`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
