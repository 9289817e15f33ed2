// The conversation panel: a session as a chat (sessions/conversation), following it live.
//
// One panel per transcript. The extension renders the items to HTML (lib/conversationHtml) and
// posts it to the webview, whose small script only handles clicks: fold state, "show hidden",
// "load earlier", branch switching, subagent expansion, and a click on a message, which reveals
// its line in the transcript. Strict CSP: nothing but this script (by nonce) and data: images.
// Opened at a message (a search result), the panel loads back to it, scrolls to it and highlights it.
// The page's messages are acted on only for the paths and lines this panel rendered into it (lib/webviewMessages).

import * as vscode from 'vscode';
import { SessionServer } from './client';
import { renderApiForm, renderItems } from './lib/conversationHtml';
import { escapeHtml } from './lib/markdown';
import { ConversationItem, ConversationParams, ConversationResult, Methods } from './lib/protocol';
import { acceptMessage, RenderedTargets } from './lib/webviewMessages';

const PAGE = 200;
/** The most items the server gives in one answer. */
const MAX_ITEMS = 5000;

function shortTime(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) {
    return iso;
  }
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export class ConversationPanel implements vscode.Disposable {
  private static readonly open = new Map<string, ConversationPanel>();

  private readonly panel: vscode.WebviewPanel;
  private readonly subs: vscode.Disposable[] = [];
  private items: ConversationItem[] = [];
  private hasMore = false;
  private leafUuid: string | undefined;
  private showHidden = false;
  private sessionId = '';
  private loading: Promise<void> | undefined;
  /** The item a search result opened the panel at: highlighted until another branch is shown. */
  private atId: string | undefined;
  /** The transcript lines and subagent paths put into the page: the only ones its messages may name. */
  private readonly targets: RenderedTargets;
  private refusedLogged = false;

  /** Opens (or shows) the panel of a session, by its transcript's path or its id; with `at`, at the
   * message of the row on that 0-based line of the transcript. */
  static async show(
    server: SessionServer,
    target: { path?: string; sessionId: string },
    title: string,
    at?: { line: number },
  ): Promise<ConversationPanel> {
    const path = target.path ?? (await server.request<ConversationResult>(Methods.conversation, { sessionId: target.sessionId, limit: 1 })).path;
    let panel = ConversationPanel.open.get(path);
    if (panel) {
      panel.panel.reveal(vscode.ViewColumn.Active);
    } else {
      panel = new ConversationPanel(server, path, title);
      ConversationPanel.open.set(path, panel);
    }
    await (at ? panel.openAt(at.line) : panel.reload());
    return panel;
  }

  private constructor(
    private readonly server: SessionServer,
    private readonly path: string,
    title: string,
  ) {
    this.targets = new RenderedTargets(path);
    this.panel = vscode.window.createWebviewPanel(
      'sessionLsp.conversation',
      `Conversation: ${title}`,
      { viewColumn: vscode.ViewColumn.Active },
      { enableScripts: true, retainContextWhenHidden: true, localResourceRoots: [] },
    );
    this.panel.webview.html = page(this.panel.webview, title);
    this.subs.push(
      this.panel.webview.onDidReceiveMessage((m) => void this.onMessage(m)),
      this.panel.onDidDispose(() => this.dispose()),
      server.onDidChangeSessions((p) => {
        if (this.sessionId && (p.sessionIds ?? []).includes(this.sessionId)) {
          void this.reload();
        }
      }),
    );
  }

  private async fetch(params: Partial<ConversationParams>): Promise<ConversationResult> {
    return this.server.request<ConversationResult>(Methods.conversation, {
      path: this.path,
      leafUuid: this.leafUuid,
      apiForm: this.showHidden,
      ...params,
    });
  }

  /** The conversation from its end back to the message of the row on `line`, which is scrolled to
   * and highlighted; a row on another branch shows that branch. */
  async openAt(line: number): Promise<void> {
    const run = async () => {
      try {
        const ask = () =>
          this.server.request<ConversationResult>(Methods.conversation, {
            path: this.path,
            apiForm: this.showHidden,
            limit: PAGE,
            atLine: line,
          });
        let res = await ask();
        if (!this.showHidden && res.items.some((i) => i.id === res.atId && i.hidden)) {
          this.showHidden = true; // the message found is one a person does not see by default
          res = await ask();
        }
        this.leafUuid = res.atBranch ? (res.leafUuid ?? undefined) : undefined;
        this.sessionId = res.sessionId;
        this.items = res.items;
        this.hasMore = res.hasMore;
        this.atId = res.atId ?? undefined;
        this.render(res, true);
      } catch (e) {
        this.post({ type: 'error', text: e instanceof Error ? e.message : String(e) });
      }
    };
    this.loading = (this.loading ?? Promise.resolve()).then(run);
    return this.loading;
  }

  /** The newest page again (as many items as are loaded, at least one page). */
  async reload(): Promise<void> {
    const run = async () => {
      try {
        const res = await this.fetch({ limit: Math.min(MAX_ITEMS, Math.max(PAGE, this.items.length)) });
        this.sessionId = res.sessionId;
        this.items = res.items;
        this.hasMore = res.hasMore;
        this.render(res);
      } catch (e) {
        this.post({ type: 'error', text: e instanceof Error ? e.message : String(e) });
      }
    };
    this.loading = (this.loading ?? Promise.resolve()).then(run);
    return this.loading;
  }

  private async loadEarlier(): Promise<void> {
    if (!this.items.length) {
      return;
    }
    const res = await this.fetch({ limit: PAGE, before: this.items[0].id });
    this.items = [...res.items, ...this.items];
    this.hasMore = res.hasMore;
    this.render(res);
  }

  private render(res: ConversationResult, scrollToAt = false): void {
    const html = renderItems(this.items, { path: this.path, time: shortTime });
    this.targets.clear(); // the page's chat (with any subagent expanded in it) is replaced by this one
    this.targets.add(this.items);
    const shown = this.items.filter((i) => !i.hidden).length;
    this.post({
      type: 'render',
      html,
      api: this.showHidden && res.messages ? renderApiForm(res.messages) : '',
      hasMore: this.hasMore,
      showHidden: this.showHidden,
      status: `${shown} items shown, ${this.items.length - shown} hidden · leaf ${res.leafUuid ?? '?'}`,
      at: this.atId ?? '',
      scrollToAt,
    });
  }

  private post(msg: unknown): void {
    void this.panel.webview.postMessage(msg);
  }

  private async onMessage(raw: unknown): Promise<void> {
    const m = acceptMessage(raw, this.targets);
    if (!m) {
      return;
    }
    if ('refused' in m) {
      if (!this.refusedLogged) {
        this.refusedLogged = true;
        this.server.log(`conversation ${this.path}: ignored a message from the page naming what it was not given: ${m.refused} (further ones are not logged)`);
      }
      return;
    }
    try {
      if (m.type === 'reveal') {
        await this.reveal(m.path, m.line);
      } else if (m.type === 'hidden') {
        this.showHidden = m.on;
        await this.reload();
      } else if (m.type === 'more') {
        await this.loadEarlier();
      } else if (m.type === 'branch') {
        this.leafUuid = m.leafUuid;
        this.items = [];
        this.atId = undefined;
        await this.reload();
      } else if (m.type === 'subagent') {
        const res = await this.server.request<ConversationResult>(Methods.conversation, { path: m.path, limit: 1000 });
        const html = renderItems(res.items, { path: m.path, time: shortTime });
        this.targets.add(res.items, m.path);
        this.post({ type: 'subagent', id: m.id, path: m.path, html });
      }
    } catch (e) {
      this.post({ type: 'error', text: e instanceof Error ? e.message : String(e) });
    }
  }

  /** Opens the transcript beside the panel with `line` (0-based) selected. */
  private async reveal(file: string, line: number): Promise<void> {
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(file));
    const at = Math.min(line, doc.lineCount - 1);
    const range = doc.lineAt(at).range;
    const editor = await vscode.window.showTextDocument(doc, {
      viewColumn: vscode.ViewColumn.Beside,
      preserveFocus: false,
      selection: new vscode.Selection(range.start, range.start),
    });
    editor.revealRange(range, vscode.TextEditorRevealType.InCenter);
  }

  dispose(): void {
    ConversationPanel.open.delete(this.path);
    this.subs.forEach((d) => d.dispose());
    this.subs.length = 0;
  }
}

function page(webview: vscode.Webview, title: string): string {
  const nonce = Array.from({ length: 4 }, () => Math.random().toString(36).slice(2)).join('');
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<style nonce="${nonce}">${STYLE}</style></head>
<body>
<header class="bar">
  <span class="title">${escapeHtml(title)}</span>
  <label><input type="checkbox" id="hidden"> What the model saw</label>
  <span id="status" class="muted"></span>
</header>
<div id="api"></div>
<button id="more" class="more">Load earlier messages</button>
<main id="chat"><div class="muted">Loading…</div></main>
<script nonce="${nonce}">${SCRIPT}</script>
</body></html>`;
}

const STYLE = `
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground); padding: 0 18px 40px; max-width: 980px; }
.bar { position: sticky; top: 0; background: var(--vscode-editor-background); padding: 8px 0; display: flex; gap: 16px; align-items: center; border-bottom: 1px solid var(--vscode-panel-border); z-index: 2; }
.bar .title { font-weight: 600; }
.muted, .head, .note { color: var(--vscode-descriptionForeground); font-size: 0.9em; }
.more { display: none; margin: 10px 0; }
.more.shown { display: inline-block; }
button { background: var(--vscode-button-secondaryBackground, var(--vscode-button-background)); color: var(--vscode-button-secondaryForeground, var(--vscode-button-foreground)); border: none; padding: 3px 10px; cursor: pointer; border-radius: 2px; }
.msg { margin: 10px 0; padding: 6px 10px; border-radius: 4px; cursor: pointer; }
.msg:hover { outline: 1px solid var(--vscode-focusBorder); }
.msg.user { background: var(--vscode-textBlockQuote-background); border-left: 3px solid var(--vscode-textLink-foreground); }
.msg.notification { border-left-color: var(--vscode-charts-yellow, #cc0); }
.msg.assistant.error { border-left: 3px solid var(--vscode-errorForeground); }
.head { display: flex; gap: 10px; margin-bottom: 2px; }
.head .who { font-weight: 600; color: var(--vscode-foreground); }
.head .line { margin-left: auto; }
.md p { margin: 4px 0; }
.md pre, pre { font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size); background: var(--vscode-textCodeBlock-background); padding: 6px 8px; overflow-x: auto; white-space: pre-wrap; word-break: break-word; max-height: 420px; overflow-y: auto; }
code { font-family: var(--vscode-editor-font-family); }
details > summary { cursor: pointer; user-select: none; }
details.tool, details.thinking, details.summary { border: 1px solid var(--vscode-panel-border); border-radius: 4px; padding: 4px 8px; }
details.thinking summary { font-style: italic; color: var(--vscode-descriptionForeground); }
.tool-name { font-weight: 600; margin: 0 8px 0 4px; }
.tool-arg { font-family: var(--vscode-editor-font-family); color: var(--vscode-descriptionForeground); }
.badge { margin-left: 8px; font-size: 0.8em; padding: 0 5px; border-radius: 6px; background: var(--vscode-badge-background); color: var(--vscode-badge-foreground); }
.status.ok { color: var(--vscode-testing-iconPassed, #3a3); }
.status.err { color: var(--vscode-errorForeground); }
.result.error pre { border-left: 3px solid var(--vscode-errorForeground); }
.result-head { font-size: 0.85em; color: var(--vscode-descriptionForeground); margin-top: 6px; }
.diff { font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size); margin: 6px 0; border: 1px solid var(--vscode-panel-border); }
.diff-title { padding: 2px 6px; background: var(--vscode-editorGroupHeader-tabsBackground); }
.hunk { color: var(--vscode-descriptionForeground); padding: 0 6px; }
.dl { display: flex; white-space: pre-wrap; }
.dl .ln { width: 3em; text-align: right; padding-right: 6px; color: var(--vscode-editorLineNumber-foreground); flex: none; }
.dl .tx { flex: 1; padding-left: 4px; }
.dl.add { background: var(--vscode-diffEditor-insertedLineBackground, rgba(0,160,0,0.2)); }
.dl.del { background: var(--vscode-diffEditor-removedLineBackground, rgba(200,0,0,0.2)); }
.sep { display: flex; align-items: center; color: var(--vscode-descriptionForeground); margin: 18px 0 6px; }
.sep::before, .sep::after { content: ''; flex: 1; border-top: 1px dashed var(--vscode-descriptionForeground); margin: 0 8px; }
.msg.compaction, .msg.branch { cursor: default; }
.branch-head { font-size: 0.9em; color: var(--vscode-descriptionForeground); margin-bottom: 4px; }
.branch-btn { margin: 2px 6px 2px 0; }
.branch-btn.current { background: var(--vscode-button-background); color: var(--vscode-button-foreground); }
.cmd { font-family: var(--vscode-editor-font-family); }
.msg.cmd-out pre { margin: 0; }
.hidden-item { display: none; opacity: 0.8; border: 1px dashed var(--vscode-descriptionForeground); }
body.show-hidden .hidden-item { display: block; }
.img { max-width: 320px; max-height: 240px; display: block; margin: 6px 0; image-rendering: pixelated; min-width: 48px; }
.subagent { margin: 6px 0; border-left: 2px solid var(--vscode-textLink-foreground); padding-left: 8px; }
.apiform { margin: 8px 0; }
.msg.at { outline: 2px solid var(--vscode-editor-findMatchBorder, var(--vscode-focusBorder)); background: var(--vscode-editor-findMatchHighlightBackground, rgba(234, 92, 0, 0.2)); }
.error-box { color: var(--vscode-errorForeground); }
`;

const SCRIPT = `
const vscode = acquireVsCodeApi();
const chat = document.getElementById('chat');
const api = document.getElementById('api');
const more = document.getElementById('more');
const hidden = document.getElementById('hidden');
const status = document.getElementById('status');
const openIds = new Set();
function remember(root) { root.querySelectorAll('details[data-id]').forEach((d) => { if (d.open) openIds.add(d.dataset.id); else openIds.delete(d.dataset.id); }); }
function restore(root) { root.querySelectorAll('details[data-id]').forEach((d) => { if (openIds.has(d.dataset.id)) d.open = true; }); }
document.addEventListener('toggle', (e) => {
  const d = e.target;
  if (!(d instanceof HTMLDetailsElement) || !d.dataset.id) return;
  if (d.open) openIds.add(d.dataset.id); else openIds.delete(d.dataset.id);
  if (d.open && d.dataset.subagent && !d.dataset.loaded) {
    d.dataset.loaded = '1';
    vscode.postMessage({ type: 'subagent', path: d.dataset.subagent, id: d.dataset.id });
  }
}, true);
hidden.addEventListener('change', () => vscode.postMessage({ type: 'hidden', on: hidden.checked }));
more.addEventListener('click', () => { more.disabled = true; vscode.postMessage({ type: 'more' }); });
document.addEventListener('click', (e) => {
  const t = e.target;
  if (!(t instanceof Element)) return;
  const branch = t.closest('.branch-btn');
  if (branch) { vscode.postMessage({ type: 'branch', leafUuid: branch.dataset.leaf }); return; }
  if (t.closest('summary, a, button, input, label, pre, .diff')) return;
  const msg = t.closest('.msg[data-line]');
  if (!msg) return;
  const owner = msg.parentElement && msg.parentElement.closest('[data-subagent]');
  vscode.postMessage({ type: 'reveal', line: Number(msg.dataset.line), path: owner ? owner.dataset.subagent : '' });
});
window.addEventListener('message', (e) => {
  const m = e.data || {};
  if (m.type === 'render') {
    const atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
    remember(chat);
    chat.innerHTML = m.html;
    restore(chat);
    api.innerHTML = m.api || '';
    restore(api);
    more.classList.toggle('shown', !!m.hasMore);
    more.disabled = false;
    hidden.checked = !!m.showHidden;
    document.body.classList.toggle('show-hidden', !!m.showHidden);
    status.textContent = m.status || '';
    chat.querySelectorAll('.msg.at').forEach((x) => x.classList.remove('at'));
    const at = m.at ? [...chat.querySelectorAll('.msg[data-id]')].find((x) => x.dataset.id === m.at) : undefined;
    if (at) at.classList.add('at');
    if (at && m.scrollToAt) {
      const fold = at.querySelector('details');
      if (fold) fold.open = true;
      at.scrollIntoView({ block: 'center' });
    } else if (atBottom) window.scrollTo(0, document.body.scrollHeight);
  } else if (m.type === 'subagent') {
    const d = [...document.querySelectorAll('details[data-subagent]')].find((x) => x.dataset.id === m.id);
    if (d) { const body = d.querySelector('.subagent-body'); body.innerHTML = m.html; restore(body); }
  } else if (m.type === 'error') {
    status.textContent = m.text;
    status.classList.add('error-box');
  }
});
`;
