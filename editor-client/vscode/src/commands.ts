// The extension's commands: open, resume, open conversation, fork, run a turn, search, copy id.

import * as vscode from 'vscode';
import * as fs from 'fs';
import * as path from 'path';
import * as os from 'os';
import { SessionServer } from './client';
import { SessionsProvider } from './view';
import { TurnPanel } from './turnPanel';
import { ConversationPanel } from './conversationPanel';
import { accumulateProgress, isInside } from './lib/command';
import { CONVERSATION_SCHEME, parseLink } from './lib/conversationLink';
import { isValidSessionId, requireSessionId, resumeCommandLine, resumeRefusal, sessionIdFromPath } from './lib/ids';
import { appendedRows, oneLine, pickText, projectLabel, promptText, relativeTime, unmarkSnippet } from './lib/format';
import {
  ForkResult,
  Methods,
  RunTurnResult,
  SessionInfo,
} from './lib/protocol';
import { findUuidLine, promptsInText, sessionIdInText, uuidAtLine } from './lib/transcript';
import { Node } from './lib/tree';
import { transcriptUri } from './storeDocuments';
import { turnCwd } from './lib/turnCwd';

export const TRANSCRIPT_LANGUAGE = 'claude-transcript';
/** The LSP symbol kind of a session in workspace/symbol (its messages have other kinds). */
const LSP_SYMBOL_FILE = 1;

interface Target {
  sessionId: string;
  info?: SessionInfo;
  /** The file the target came from (a session's or a subagent's transcript). */
  path?: string;
  /** A row to act at (fork at it). */
  atUuid?: string;
  atLine?: number;
  atLabel?: string;
  fromEditor?: boolean;
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export class Commands {
  constructor(
    private readonly server: SessionServer,
    private readonly sessions: SessionsProvider,
  ) {}

  register(context: vscode.ExtensionContext): void {
    const reg = (id: string, fn: (...args: any[]) => unknown) =>
      context.subscriptions.push(
        vscode.commands.registerCommand(id, async (...args: any[]) => {
          try {
            return await fn.apply(this, args);
          } catch (e) {
            this.server.log(`${id} failed: ${errorText(e)}`);
            void vscode.window.showErrorMessage(`Claude Sessions: ${errorText(e)}`);
            return undefined;
          }
        }),
      );
    reg('sessionLsp.refreshSessions', () => this.sessions.refresh());
    reg('sessionLsp.restartServer', async () => {
      await this.server.restart();
      this.sessions.refresh();
    });
    reg('sessionLsp.showOutput', () => this.server.output.show(true));
    reg('sessionLsp.openTranscript', this.openTranscript);
    reg('sessionLsp.resumeInTerminal', this.resumeInTerminal);
    reg('sessionLsp.openConversation', this.openConversation);
    reg('sessionLsp.forkSession', this.forkSession);
    reg('sessionLsp.runAgentTurn', this.runAgentTurn);
    reg('sessionLsp.searchSessions', this.searchSessions);
    reg('sessionLsp.copySessionId', this.copySessionId);
    reg('sessionLsp.revealInView', this.revealInView);
    // A workspace-symbol result is a claude-conversation: link (client.ts): opening it shows the
    // conversation at that message instead of the placeholder document.
    context.subscriptions.push(
      vscode.workspace.registerTextDocumentContentProvider(CONVERSATION_SCHEME, {
        provideTextDocumentContent: () => 'Opening the conversation…',
      }),
      vscode.window.onDidChangeActiveTextEditor((editor) => {
        if (editor) {
          void this.followLink(editor).catch((e) => void vscode.window.showErrorMessage(`Claude Sessions: ${errorText(e)}`));
        }
      }),
    );
  }

  /** Replaces a claude-conversation: editor by the conversation panel at the message it names. */
  private async followLink(editor: vscode.TextEditor): Promise<void> {
    const uri = editor.document.uri;
    const link = parseLink(uri);
    if (!link) {
      return;
    }
    const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs);
    const placeholders = tabs.filter((t) => t.input instanceof vscode.TabInputText && t.input.uri.toString() === uri.toString());
    await vscode.window.tabGroups.close(placeholders);
    await this.openConversationAt(link.path, link.line);
  }

  /** The conversation panel of the transcript at `file`, at the message on `line` (0-based). */
  private async openConversationAt(file: string, line: number, sessionId?: string): Promise<void> {
    const id = sessionId ?? sessionIdFromPath(file) ?? '';
    const info = id ? await this.infoFor(id) : undefined;
    const title = (info?.title || id || path.basename(file)) + (sessionIdFromPath(file) ? '' : ` · ${path.basename(file, '.jsonl')}`);
    await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: 'Opening conversation…' }, () =>
      ConversationPanel.show(this.server, { path: file, sessionId: id }, title, { line }),
    );
  }

  // ---- targets -------------------------------------------------------------------------------

  private async infoFor(id: string): Promise<SessionInfo | undefined> {
    const known = this.sessions.session(id);
    if (known) {
      return known;
    }
    try {
      await this.sessions.sessions();
    } catch {
      /* listed below as undefined */
    }
    return this.sessions.session(id);
  }

  private isTranscript(doc: vscode.TextDocument): boolean {
    return (
      doc.languageId === TRANSCRIPT_LANGUAGE ||
      (doc.uri.scheme === 'file' && doc.uri.fsPath.endsWith('.jsonl') && isInside(doc.uri.fsPath, this.server.projectsDir))
    );
  }

  private async targetFromDocument(doc: vscode.TextDocument, cursorLine?: number): Promise<Target> {
    const text = doc.getText();
    const id = sessionIdFromPath(doc.uri.fsPath) ?? sessionIdInText(text);
    if (!id) {
      throw new Error(`${path.basename(doc.uri.fsPath)} does not name a Claude session`);
    }
    const t: Target = { sessionId: id, path: doc.uri.fsPath, info: await this.infoFor(id), fromEditor: true };
    if (cursorLine !== undefined) {
      const lines = text.split('\n');
      const row = uuidAtLine(lines, cursorLine);
      if (row) {
        t.atUuid = row.uuid;
        t.atLine = row.line;
      }
    }
    return t;
  }

  /** Works out which session a command is about: a view node, a URI, an id, the active transcript, or a pick. */
  private async resolveTarget(arg: unknown, opts: { pick?: boolean; cursor?: boolean } = {}): Promise<Target | undefined> {
    if (arg && typeof arg === 'object' && 'kind' in (arg as Node)) {
      const node = arg as Node;
      switch (node.kind) {
        case 'session':
          return { sessionId: node.info.sessionId, info: node.info, path: node.info.uri ?? node.info.path };
        case 'subagent':
          return { sessionId: node.session.sessionId, info: node.session, path: node.info.uri ?? node.info.path };
        case 'branchPoint':
          return {
            sessionId: node.session.sessionId,
            info: node.session,
            path: node.session.path,
            atUuid: node.uuid,
            atLine: node.line,
            atLabel: node.label,
          };
        default:
          break;
      }
    }
    if (arg instanceof vscode.Uri) {
      const editor = vscode.window.activeTextEditor;
      const doc =
        editor && editor.document.uri.toString() === arg.toString()
          ? editor.document
          : await vscode.workspace.openTextDocument(arg);
      const cursor = opts.cursor && editor && editor.document === doc ? editor.selection.active.line : undefined;
      return this.targetFromDocument(doc, cursor);
    }
    if (typeof arg === 'string' && arg.trim()) {
      const id = requireSessionId(arg.trim());
      return { sessionId: id, info: await this.infoFor(id) };
    }
    if (arg && typeof arg === 'object' && typeof (arg as { sessionId?: unknown }).sessionId === 'string') {
      const a = arg as { sessionId: string; atUuid?: string };
      const id = requireSessionId(a.sessionId);
      return { sessionId: id, info: await this.infoFor(id), atUuid: a.atUuid };
    }
    const editor = vscode.window.activeTextEditor;
    if (editor && this.isTranscript(editor.document)) {
      return this.targetFromDocument(editor.document, opts.cursor ? editor.selection.active.line : undefined);
    }
    if (opts.pick === false) {
      return undefined;
    }
    return this.pickSession('Choose a session');
  }

  private async pickSession(title: string): Promise<Target | undefined> {
    const list = await this.sessions.sessions();
    if (list.length === 0) {
      void vscode.window.showInformationMessage('Claude Sessions: no sessions found.');
      return undefined;
    }
    const sorted = list.slice().sort((a, b) => (Date.parse(b.modified ?? '') || 0) - (Date.parse(a.modified ?? '') || 0));
    const pick = await vscode.window.showQuickPick(
      sorted.map((s) => ({
        label: pickText(s.title?.trim() || s.sessionId),
        description: `${pickText(projectLabel(s.projectDir, s.cwd))} · ${relativeTime(s.modified)}`,
        detail: pickText(s.sessionId),
        info: s,
      })),
      { title, matchOnDescription: true, matchOnDetail: true },
    );
    return pick ? { sessionId: pick.info.sessionId, info: pick.info, path: pick.info.path } : undefined;
  }

  // ---- open ----------------------------------------------------------------------------------

  async showTranscript(file: string, line: number | 'end'): Promise<vscode.TextEditor> {
    let doc = await vscode.workspace.openTextDocument(transcriptUri(file));
    if (doc.languageId !== TRANSCRIPT_LANGUAGE) {
      try {
        doc = await vscode.languages.setTextDocumentLanguage(doc, TRANSCRIPT_LANGUAGE);
      } catch {
        /* keep its language */
      }
    }
    let target = line === 'end' ? lastRowLine(doc) : Math.max(0, Math.min(line, doc.lineCount - 1));
    if (target < 0) {
      target = 0;
    }
    const range = new vscode.Range(target, 0, target, 0);
    const editor = await vscode.window.showTextDocument(doc, { selection: range, preview: false });
    editor.revealRange(range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
    return editor;
  }

  async openTranscript(arg?: unknown): Promise<void> {
    if (arg && typeof arg === 'object' && 'kind' in (arg as Node)) {
      const node = arg as Node;
      if (node.kind === 'subagent') {
        await this.showTranscript(node.info.uri ?? node.info.path, 'end');
        return;
      }
      if (node.kind === 'branchPoint') {
        await this.showTranscript(node.session.uri ?? node.session.path, node.line);
        return;
      }
    }
    const t = await this.resolveTarget(arg);
    if (!t) {
      return;
    }
    const file = t.info?.uri ?? t.info?.path ?? t.path;
    if (!file) {
      throw new Error(`no transcript is known for session ${t.sessionId}`);
    }
    await this.showTranscript(file, await this.leafLine(t.info, file));
  }

  /** The line of the row resume starts from (the tree's leaf), else of the leaf the listing names. */
  private async leafLine(info: SessionInfo | undefined, file: string): Promise<number | 'end'> {
    if (!info) {
      return 'end';
    }
    const tree = await this.sessions.tree(info.sessionId);
    const leaf = tree?.leafUuid ?? info.leafUuid;
    if (!leaf) {
      return 'end';
    }
    const node = tree?.nodes.find((n) => n.uuid === leaf);
    if (node && Number.isInteger(node.line)) {
      return node.line;
    }
    try {
      const line = findUuidLine(fs.readFileSync(file, 'utf8'), leaf);
      return line >= 0 ? line : 'end';
    } catch {
      return 'end';
    }
  }

  // ---- resume --------------------------------------------------------------------------------

  async resumeInTerminal(arg?: unknown): Promise<void> {
    const t = await this.resolveTarget(arg);
    if (!t) {
      return;
    }
    const commandLine = resumeCommandLine(t.sessionId);
    const info = t.info ?? (await this.infoFor(t.sessionId));
    const refused = resumeRefusal(info);
    if (refused) {
      throw new Error(refused);
    }
    let cwd = info?.cwd ?? undefined;
    if (!cwd || !isDirectory(cwd)) {
      const fallback = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? os.homedir();
      void vscode.window.showWarningMessage(
        cwd
          ? `The session's working directory ${cwd} does not exist here; resuming in ${fallback}. Claude Code looks sessions up by directory, so it may not find it.`
          : `The session's working directory is not recorded; resuming in ${fallback}.`,
      );
      cwd = fallback;
    }
    const title = oneLine(info?.title || t.sessionId, 30);
    const term = vscode.window.createTerminal({ name: `claude: ${title}`, cwd });
    term.show();
    term.sendText(commandLine, true);
    this.server.log(`resume in terminal: (cd ${cwd} && ${commandLine})`);
  }

  // ---- conversation --------------------------------------------------------------------------

  async openConversation(arg?: unknown): Promise<void> {
    const t = await this.resolveTarget(arg);
    if (!t) {
      return;
    }
    const info = t.info ?? (await this.infoFor(t.sessionId));
    await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: 'Opening conversation…' }, () =>
      ConversationPanel.show(this.server, { path: t.path ?? info?.path, sessionId: t.sessionId }, info?.title || t.sessionId),
    );
  }

  // ---- fork ----------------------------------------------------------------------------------

  async forkSession(arg?: unknown): Promise<void> {
    const t = await this.resolveTarget(arg, { cursor: true });
    if (!t) {
      return;
    }
    let atUuid = t.atUuid;
    if (t.fromEditor && t.atUuid) {
      const choice = await vscode.window.showQuickPick(
        [
          { label: `$(repo-forked) Fork at line ${(t.atLine ?? 0) + 1}`, description: 'the row under the cursor and everything before it', at: true },
          { label: '$(repo-forked) Fork the whole session', description: 'up to its current leaf', at: false },
        ],
        { title: 'Fork Session' },
      );
      if (!choice) {
        return;
      }
      atUuid = choice.at ? t.atUuid : undefined;
    }
    const title = await vscode.window.showInputBox({
      title: 'Fork Session',
      prompt: 'Title for the new session (optional)',
      placeHolder: t.info?.title ? `Fork of ${oneLine(t.info.title, 40)}` : 'Leave empty for no title',
    });
    if (title === undefined) {
      return;
    }
    const params: Record<string, unknown> = { sessionId: t.sessionId };
    if (atUuid) {
      params.atUuid = atUuid;
    }
    if (title.trim()) {
      params.title = title.trim();
    }
    const res = await this.server.request<ForkResult>(Methods.fork, params);
    this.server.log(`forked ${t.sessionId}${atUuid ? ` at ${atUuid}` : ''} into ${res.sessionId}`);
    this.sessions.refresh();
    if (res.path) {
      await this.showTranscript(res.path, 'end');
    }
    const choice = await vscode.window.showInformationMessage(
      `Forked into a new session ${res.sessionId}.`,
      'Resume in Terminal',
      'Copy Session ID',
    );
    if (choice === 'Resume in Terminal') {
      await this.resumeInTerminal(res.sessionId);
    } else if (choice === 'Copy Session ID') {
      await this.copySessionId(res.sessionId);
    }
  }

  // ---- run a turn ----------------------------------------------------------------------------

  async runAgentTurn(arg?: unknown): Promise<void> {
    const t = await this.resolveTarget(arg, { pick: false });
    const info = t ? (t.info ?? (await this.infoFor(t.sessionId))) : undefined;
    const where = turnCwd({
      hasSession: Boolean(t),
      recordedCwd: info?.cwd ?? undefined,
      storeId: info?.storeId ?? undefined,
      workspaceFolder: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath,
      home: os.homedir(),
      isDirectory,
    });
    if ('error' in where) {
      void vscode.window.showErrorMessage(where.error);
      return;
    }
    const cwd = where.shown;
    const sessionLabel = t ? oneLine(info?.title || t.sessionId, 50) : `new session in ${cwd}`;
    const prompt = await vscode.window.showInputBox({
      title: 'Run Agent Turn',
      prompt: promptText(t ? `Continue “${sessionLabel}”` : `Start a new session in ${cwd}`),
      placeHolder: 'Prompt for the agent',
      ignoreFocusOut: true,
    });
    if (!prompt || !prompt.trim()) {
      return;
    }
    const cfg = vscode.workspace.getConfiguration('sessionLsp');
    const provider = (cfg.get<string>('provider') ?? '').trim();
    const model = (cfg.get<string>('model') ?? '').trim();
    const modelLabel = [provider || 'server default provider', model].filter(Boolean).join(' / ');
    const params: Record<string, unknown> = { prompt };
    if (t) {
      params.sessionId = requireSessionId(t.sessionId);
    }
    if (info?.storeId) {
      // a store session: the server runs the turn on its local copy and appends what it wrote to the store
      params.store = info.storeId;
    }
    if (where.send !== undefined) {
      params.cwd = where.send; // a store session: the window's folder, never the cwd its rows record
    }
    if (provider) {
      params.provider = provider;
    }
    if (model) {
      params.model = model;
    }
    if (cfg.get<boolean>('askPermission') ?? true) {
      params.askPermission = true; // Bash, Edit and Write are offered, each asked for before it runs
    }

    const panel = new TurnPanel(`Agent turn: ${oneLine(sessionLabel, 30)}`, {
      prompt,
      session: t ? `${sessionLabel} (${t.sessionId})` : sessionLabel,
      model: modelLabel,
    });
    const cts = new vscode.CancellationTokenSource();
    const cancelSub = panel.onDidRequestCancel(() => cts.cancel());
    this.server.log(`runTurn: ${t ? t.sessionId : 'new session'} via ${modelLabel}`);
    try {
      await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'Claude Sessions: running agent turn', cancellable: true },
        async (progress, token) => {
          const sub = token.onCancellationRequested(() => cts.cancel());
          let text = '';
          try {
            const res = await this.server.requestWithProgress<RunTurnResult>(
              Methods.runTurn,
              params,
              (v) => {
                if (v.kind === 'begin') {
                  panel.setStatus(v.message ? `${v.title}: ${v.message}` : `${v.title}…`);
                } else if (v.kind === 'report' && v.message) {
                  text = accumulateProgress(text, v.message);
                  panel.setReply(text);
                  progress.report({ message: oneLine(text.slice(-80), 60) });
                }
              },
              cts.token,
            );
            if (typeof res?.text === 'string' && res.text) {
              text = res.text;
            }
            panel.setReply(text);
            const usage = res?.usage ? formatUsage(res.usage) : '';
            const rows = appendedRows(res?.appended);
            panel.finish(`Done: ${rows} to session ${res?.sessionId ?? '?'}${usage ? ` · ${usage}` : ''}`, true);
            this.server.log(`runTurn done: ${rows} to ${res?.sessionId}`);
            this.sessions.refresh();
          } catch (e) {
            if (cts.token.isCancellationRequested) {
              panel.finish('Cancelled.', false);
              this.server.log('runTurn cancelled');
              this.sessions.refresh();
            } else {
              panel.finish(`Failed: ${errorText(e)}`, false);
              throw e;
            }
          } finally {
            sub.dispose();
          }
        },
      );
    } finally {
      cancelSub.dispose();
      cts.dispose();
    }
  }

  // ---- search --------------------------------------------------------------------------------

  async searchSessions(): Promise<void> {
    type Item = vscode.QuickPickItem & { file?: string; line?: number; info?: SessionInfo; sessionId?: string };
    const qp = vscode.window.createQuickPick<Item>();
    qp.title = 'Search Sessions';
    qp.placeholder = 'Session titles and prompts; every message as you type (full text)';
    qp.matchOnDescription = true;
    qp.matchOnDetail = true;
    qp.busy = true;
    qp.show();
    let picked = false;
    const done = new Promise<Item | undefined>((resolve) => {
      qp.onDidAccept(() => {
        picked = true;
        resolve(qp.selectedItems[0] ?? qp.activeItems[0]);
        qp.hide();
      });
      qp.onDidHide(() => {
        picked = true;
        resolve(undefined);
      });
    });
    let sessionItems: Item[] = [];
    let promptItems: Item[] = [];
    let hitItems: Item[] = [];
    // One update per change: replacing the items resets the active one under the user's cursor.
    const show = () => {
      if (!picked) {
        qp.items = [...sessionItems, ...promptItems, ...hitItems];
      }
    };
    // Every message holding the words (the server's full-text index, workspace/symbol), as the user types.
    let asked = 0;
    let timer: NodeJS.Timeout | undefined;
    qp.onDidChangeValue((value) => {
      clearTimeout(timer);
      const mine = ++asked;
      if (value.trim().length < 2) {
        hitItems = [];
        show();
        return;
      }
      timer = setTimeout(() => void this.messageHits(value).then((items) => {
        if (mine === asked) {
          hitItems = items;
          show();
        }
      }), 150);
    });
    const list = (await this.sessions.sessions())
      .slice()
      .sort((a, b) => (Date.parse(b.modified ?? '') || 0) - (Date.parse(a.modified ?? '') || 0));
    sessionItems = list.map((s) => ({
      label: `$(comment-discussion) ${pickText(s.title?.trim() || s.sessionId)}`,
      description: `${pickText(projectLabel(s.projectDir, s.cwd))} · ${relativeTime(s.modified)}`,
      detail: pickText(s.sessionId),
      info: s,
      file: s.path,
    }));
    show();
    // Prompts: the user rows a person typed, read from each transcript.
    for (const s of list.slice(0, 500)) {
      if (picked) {
        break;
      }
      let text: string;
      try {
        const st = await fs.promises.stat(s.path);
        if (st.size > 50 * 1024 * 1024) {
          continue;
        }
        text = await fs.promises.readFile(s.path, 'utf8');
      } catch {
        continue;
      }
      for (const p of promptsInText(text)) {
        promptItems.push({
          label: `$(comment) ${pickText(oneLine(p.text, 100))}`,
          description: `${pickText(oneLine(s.title || s.sessionId, 40))} · line ${p.line + 1}`,
          info: s,
          file: s.path,
          line: p.line,
        });
      }
    }
    show();
    qp.busy = false;
    const choice = await done;
    clearTimeout(timer);
    qp.dispose();
    if (!choice || !choice.file) {
      return;
    }
    if (choice.line === undefined) {
      const info = choice.info;
      await ConversationPanel.show(this.server, { path: choice.file, sessionId: info?.sessionId ?? '' }, info?.title || info?.sessionId || '');
      return;
    }
    await this.openConversationAt(choice.file, choice.line, choice.info?.sessionId ?? choice.sessionId);
  }

  /** Quick pick items for the messages holding every word of `query` (workspace/symbol). */
  private async messageHits(query: string): Promise<Array<vscode.QuickPickItem & { file: string; line: number; sessionId?: string }>> {
    let symbols: Array<{ name: string; kind: number; containerName?: string; location: { uri: string; range: { start: { line: number } } } }>;
    try {
      symbols = (await this.server.request<typeof symbols | null>('workspace/symbol', { query })) ?? [];
    } catch (e) {
      this.server.log(`workspace/symbol failed: ${errorText(e)}`);
      return [];
    }
    return symbols
      .filter((s) => s.kind !== LSP_SYMBOL_FILE)
      .map((s) => {
        const file = vscode.Uri.parse(s.location.uri).fsPath;
        const line = s.location.range.start.line;
        const sessionId = s.containerName;
        const title = (sessionId && this.sessions.session(sessionId)?.title) || sessionId || path.basename(file);
        return {
          label: `$(search) ${pickText(oneLine(unmarkSnippet(s.name), 120))}`,
          description: `${pickText(oneLine(title, 40))} · line ${line + 1}`,
          alwaysShow: true,
          file,
          line,
          sessionId,
        };
      });
  }

  // ---- reveal -------------------------------------------------------------------------------

  /** Shows a session (or one of its branch points: `{sessionId, uuid}`) in the Claude Sessions view. */
  async revealInView(arg?: unknown): Promise<void> {
    const t = await this.resolveTarget(arg);
    if (!t) {
      return;
    }
    const uuid = arg && typeof arg === 'object' ? (arg as { uuid?: unknown }).uuid : undefined;
    await vscode.commands.executeCommand('sessionLsp.sessions.focus');
    const node = await this.sessions.findNode(t.sessionId, typeof uuid === 'string' ? uuid : undefined);
    if (!node || !this.sessions.view) {
      throw new Error(`session ${t.sessionId} is not in the view`);
    }
    await this.sessions.view.reveal(node, { select: true, focus: false, expand: true });
  }

  // ---- copy ----------------------------------------------------------------------------------

  async copySessionId(arg?: unknown): Promise<void> {
    const t = await this.resolveTarget(arg);
    if (!t) {
      return;
    }
    if (!isValidSessionId(t.sessionId)) {
      throw new Error(`not a valid session id: ${t.sessionId}`);
    }
    await vscode.env.clipboard.writeText(t.sessionId);
    void vscode.window.showInformationMessage(`Copied session id ${t.sessionId}`);
  }
}

function isDirectory(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function lastRowLine(doc: vscode.TextDocument): number {
  for (let i = doc.lineCount - 1; i >= 0; i--) {
    if (doc.lineAt(i).text.trim()) {
      return i;
    }
  }
  return 0;
}

function formatUsage(u: Record<string, unknown>): string {
  const i = u.input_tokens ?? u.inputTokens;
  const o = u.output_tokens ?? u.outputTokens;
  const parts: string[] = [];
  if (typeof i === 'number') {
    parts.push(`${i} in`);
  }
  if (typeof o === 'number') {
    parts.push(`${o} out`);
  }
  return parts.length ? `tokens: ${parts.join(', ')}` : '';
}
