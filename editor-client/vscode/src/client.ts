// Starting, stopping and talking to the session-lsp server.

import * as vscode from 'vscode';
import { decisionOf, permissionPrompt, type PermissionParams } from './lib/permission';
import { checkPythonModule, chooseLaunch } from './lib/interpreter';
import { onPythonInterpreterChange, pythonExtensionInterpreter } from './python';
import {
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
  WorkDoneProgress,
  WorkDoneProgressBegin,
  WorkDoneProgressReport,
  WorkDoneProgressEnd,
} from 'vscode-languageclient/node';
import {
  effectiveProjectsDir,
  missingServerMessage,
  resolveExecutable,
  ServerLaunch,
} from './lib/command';
import { DidChangeParams, Methods, STORE_SCHEME } from './lib/protocol';
import { rewriteLensCommand } from './lib/lenses';
import { linkUri } from './lib/conversationLink';
import { unmarkSnippet } from './lib/format';

export type ServerState = 'stopped' | 'starting' | 'running' | 'missing' | 'failed';

const RESTART_KEYS = ['serverCommand', 'pythonPath', 'projectsDir', 'polling', 'stores'];

export class SessionServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private state: ServerState = 'stopped';
  private starting: Promise<void> | undefined;
  private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
  private readonly changeEmitter = new vscode.EventEmitter<DidChangeParams>();
  private readonly disposables: vscode.Disposable[] = [];
  private restartTimer: NodeJS.Timeout | undefined;

  /** Fires when the server starts, stops or fails. */
  readonly onDidChangeState = this.stateEmitter.event;
  /** Fires on the server's sessions/didChange notification. */
  readonly onDidChangeSessions = this.changeEmitter.event;

  constructor(readonly output: vscode.OutputChannel) {
    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (RESTART_KEYS.some((k) => e.affectsConfiguration(`sessionLsp.${k}`))) {
          this.log('settings changed: restarting the server');
          clearTimeout(this.restartTimer);
          this.restartTimer = setTimeout(() => void this.restart(), 400);
        }
      }),
    );
    // the Python extension's interpreter is used when `sessionLsp.pythonPath` is empty: follow its changes
    void onPythonInterpreterChange(() => {
      const pythonPath = vscode.workspace.getConfiguration('sessionLsp').get<string>('pythonPath') ?? '';
      if (!pythonPath.trim() && this.state !== 'stopped') {
        this.log("the Python extension's interpreter changed: restarting the server");
        void this.restart();
      }
    }).then((d) => d && this.disposables.push(d));
  }

  get currentState(): ServerState {
    return this.state;
  }

  get projectsDir(): string {
    return effectiveProjectsDir(vscode.workspace.getConfiguration('sessionLsp').get('projectsDir'));
  }

  log(msg: string): void {
    this.output.appendLine(`[${new Date().toISOString()}] ${msg}`);
  }

  private setState(s: ServerState): void {
    this.state = s;
    void vscode.commands.executeCommand('setContext', 'sessionLsp.serverState', s);
    this.stateEmitter.fire(s);
  }

  start(): Promise<void> {
    if (!this.starting) {
      this.starting = this.doStart().finally(() => {
        this.starting = undefined;
      });
    }
    return this.starting;
  }

  /** Waits for a start in progress; starts the server if it is stopped. */
  async ready(): Promise<LanguageClient> {
    if (this.state !== 'running') {
      await this.start();
    }
    if (this.state !== 'running' || !this.client) {
      throw new Error(
        this.state === 'missing'
          ? 'the session-lsp server is not installed (see the notification and the "Session LSP" output)'
          : 'the session-lsp server is not running (see the "Session LSP" output)',
      );
    }
    return this.client;
  }

  private async doStart(): Promise<void> {
    if (this.client && this.state === 'running') {
      return;
    }
    if (this.client) {
      // A client that stopped (the server died): start afresh rather than race its own restarts.
      const old = this.client;
      this.client = undefined;
      await old.dispose(2000).catch(() => undefined);
    }
    const cfg = vscode.workspace.getConfiguration('sessionLsp');
    this.setState('starting');
    const choice = await chooseLaunch(
      { serverCommand: cfg.get('serverCommand'), pythonPath: cfg.get('pythonPath') },
      { activeInterpreter: pythonExtensionInterpreter, check: (python) => checkPythonModule(python) },
    );
    choice.notes.forEach((note) => this.log(note));
    const launch = choice.launch;
    const from = choice.source === 'pythonExtension' ? " (the Python extension's interpreter)" : '';
    this.log(`starting server: ${launch.display}${from}`);

    const resolved = resolveExecutable(launch.command);
    if (!resolved) {
      this.reportMissing(launch, resolvedWhy(launch.command));
      return;
    }
    if (choice.source === 'pythonPath') {
      const err = await checkPythonModule(resolved);
      if (err) {
        this.reportMissing(launch, err);
        return;
      }
    }

    const configuredDir = (cfg.get<string>('projectsDir') ?? '').trim();
    const stores = (cfg.get<unknown[]>('stores') ?? []).filter((u): u is string => typeof u === 'string' && u.trim() !== '');
    const projectsDir = this.projectsDir;
    const serverOptions: ServerOptions = {
      command: resolved,
      args: launch.args,
      options: { env: { ...process.env } },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [
        { language: 'claude-transcript' },
        { scheme: 'file', pattern: `${projectsDir.replace(/\\/g, '/')}/**/*.jsonl` },
        { scheme: STORE_SCHEME },
      ],
      outputChannel: this.output,
      initializationOptions: {
        ...(configuredDir ? { projectsDir } : {}),
        watch: true,
        polling: cfg.get<boolean>('polling') ?? false,
        ...(stores.length ? { stores: stores.map((u) => u.trim()) } : {}),
      },
      middleware: {
        // The server's lenses name its workspace commands; run the extension's richer commands instead.
        provideCodeLenses: async (document, token, next) => {
          const lenses = await next(document, token);
          for (const lens of lenses ?? []) {
            if (lens.command) {
              const c = rewriteLensCommand(lens.command);
              if (c) {
                lens.command = { title: c.title, command: c.command, arguments: c.arguments };
              }
            }
          }
          return lenses;
        },
        // A message found by workspace/symbol opens the conversation at it (commands.ts follows the link).
        provideWorkspaceSymbols: async (query, token, next) => {
          const symbols = await next(query, token);
          for (const sym of symbols ?? []) {
            const loc = sym.location;
            if (sym.kind !== vscode.SymbolKind.File && loc.uri.scheme === 'file' && loc.uri.fsPath.endsWith('.jsonl') && 'range' in loc) {
              sym.location = new vscode.Location(vscode.Uri.from(linkUri({ path: loc.uri.fsPath, line: loc.range.start.line })), loc.range);
              sym.name = unmarkSnippet(sym.name);
            }
          }
          return symbols;
        },
      },
    };
    const client = new LanguageClient('sessionLsp', 'Session LSP', serverOptions, clientOptions);
    this.client = client;
    client.onDidChangeState((e) => {
      if (this.client !== client) {
        return;
      }
      if (e.newState === State.Stopped && this.state === 'running') {
        this.log('server stopped');
        this.setState('stopped');
      } else if (e.newState === State.Running && this.state !== 'running' && this.state !== 'starting') {
        this.setState('running');
      }
    });
    try {
      await client.start();
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      this.log(`server failed to start: ${msg}`);
      this.client = undefined;
      try {
        await client.dispose(2000);
      } catch {
        /* already dead */
      }
      this.setState('failed');
      void vscode.window
        .showErrorMessage(missingServerMessage(launch, msg), 'Open Settings', 'Show Output')
        .then((choice) => this.onNotificationChoice(choice));
      return;
    }
    client.onNotification(Methods.didChange, (p: DidChangeParams) => {
      this.changeEmitter.fire(p ?? {});
    });
    // an agent turn asks before a tool it was not allowed up front (Bash, Edit, Write) runs
    client.onRequest(Methods.permission, async (p: PermissionParams) => {
      const { message, detail, choices } = permissionPrompt(p);
      this.log(`permission asked: ${p.tool} in session ${p.sessionId}`);
      const choice = await vscode.window.showWarningMessage(message, { modal: true, detail }, ...choices);
      const decision = decisionOf(choice);
      this.log(`permission ${decision}: ${p.tool} ${p.toolUseId}`);
      return { decision };
    });
    this.log(`server running (projects folder ${projectsDir})`);
    this.setState('running');
  }

  private reportMissing(launch: ServerLaunch, detail: string): void {
    const msg = missingServerMessage(launch, detail);
    this.log(msg);
    this.setState('missing');
    void vscode.window
      .showErrorMessage(msg, 'Open Settings', 'Show Output')
      .then((choice) => this.onNotificationChoice(choice));
  }

  private onNotificationChoice(choice: string | undefined): void {
    if (choice === 'Open Settings') {
      void vscode.commands.executeCommand('workbench.action.openSettings', 'sessionLsp');
    } else if (choice === 'Show Output') {
      this.output.show(true);
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) {
      this.log('stopping server');
      try {
        await client.stop(3000);
      } catch (e) {
        this.log(`stop: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    this.setState('stopped');
  }

  async restart(): Promise<void> {
    if (this.starting) {
      await this.starting.catch(() => undefined);
    }
    await this.stop();
    await this.start();
  }

  async request<R>(method: string, params: unknown, token?: vscode.CancellationToken): Promise<R> {
    const client = await this.ready();
    return token ? client.sendRequest<R>(method, params, token) : client.sendRequest<R>(method, params);
  }

  /** Sends a request with a fresh work-done token and reports $/progress values to onProgress. */
  async requestWithProgress<R>(
    method: string,
    params: Record<string, unknown>,
    onProgress: (v: WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd) => void,
    token?: vscode.CancellationToken,
  ): Promise<R> {
    const client = await this.ready();
    const workDoneToken = `session-lsp-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
    const sub = client.onProgress(WorkDoneProgress.type, workDoneToken, onProgress);
    try {
      const p = { ...params, workDoneToken };
      return await (token ? client.sendRequest<R>(method, p, token) : client.sendRequest<R>(method, p));
    } finally {
      sub.dispose();
    }
  }

  dispose(): void {
    clearTimeout(this.restartTimer);
    void this.stop();
    this.disposables.forEach((d) => d.dispose());
    this.stateEmitter.dispose();
    this.changeEmitter.dispose();
  }
}

function resolvedWhy(command: string): string {
  return command.includes('/') || command.includes('\\') ? 'no such executable file' : 'not on the PATH';
}
