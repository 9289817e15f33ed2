// Entry point: starts the session-lsp client, the "Claude Sessions" view and the commands.

import * as vscode from 'vscode';
import { SessionServer } from './client';
import { Commands, TRANSCRIPT_LANGUAGE } from './commands';
import { SessionsProvider } from './view';
import { isInside } from './lib/command';
import { StoreDocuments } from './storeDocuments';

let server: SessionServer | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('Session LSP');
  context.subscriptions.push(output);
  server = new SessionServer(output);
  context.subscriptions.push(server);
  server.log(`Session LSP extension ${context.extension.packageJSON.version} activating`);

  const sessions = new SessionsProvider(server);
  const view = vscode.window.createTreeView('sessionLsp.sessions', { treeDataProvider: sessions, showCollapseAll: true });
  sessions.view = view;
  context.subscriptions.push(sessions, view);

  new Commands(server, sessions).register(context);
  context.subscriptions.push(new StoreDocuments(server));

  // Transcripts outside ~/.claude/projects (a configured projects folder) get the transcript language too.
  const srv = server;
  const adopt = (doc: vscode.TextDocument) => {
    if (
      doc.uri.scheme === 'file' &&
      doc.languageId !== TRANSCRIPT_LANGUAGE &&
      doc.uri.fsPath.endsWith('.jsonl') &&
      isInside(doc.uri.fsPath, srv.projectsDir)
    ) {
      void vscode.languages.setTextDocumentLanguage(doc, TRANSCRIPT_LANGUAGE).then(undefined, () => undefined);
    }
  };
  context.subscriptions.push(vscode.workspace.onDidOpenTextDocument(adopt));
  vscode.workspace.textDocuments.forEach(adopt);

  void server.start();
}

export async function deactivate(): Promise<void> {
  if (server) {
    await server.stop();
  }
}
