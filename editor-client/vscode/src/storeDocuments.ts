// Store sessions as read-only documents: the `session-store:` scheme, whose text the server serves
// (sessions/storeDocument) from its mirror of the store. VS Code shows such documents read-only.

import * as vscode from 'vscode';
import type { SessionServer } from './client';
import { Methods, STORE_SCHEME, type StoreDocumentResult } from './lib/protocol';

export class StoreDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
  private readonly disposables: vscode.Disposable[] = [];
  readonly onDidChange = this.emitter.event;

  constructor(private readonly server: SessionServer) {
    this.disposables.push(
      vscode.workspace.registerTextDocumentContentProvider(STORE_SCHEME, this),
      // an append in the store: open store documents are read again
      server.onDidChangeSessions(() => {
        for (const doc of vscode.workspace.textDocuments) {
          if (doc.uri.scheme === STORE_SCHEME) {
            this.emitter.fire(doc.uri);
          }
        }
      }),
    );
  }

  async provideTextDocumentContent(uri: vscode.Uri, token: vscode.CancellationToken): Promise<string> {
    const res = await this.server.request<StoreDocumentResult>(Methods.storeDocument, { uri: uri.toString() }, token);
    return res.text;
  }

  dispose(): void {
    this.disposables.forEach((d) => d.dispose());
    this.emitter.dispose();
  }
}

/** The URI of a transcript given as a path or as a `session-store:` URI. */
export function transcriptUri(pathOrUri: string): vscode.Uri {
  return pathOrUri.startsWith(`${STORE_SCHEME}:`) ? vscode.Uri.parse(pathOrUri) : vscode.Uri.file(pathOrUri);
}
