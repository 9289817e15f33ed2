// A webview panel that shows one agent turn: the prompt, the reply as it streams, and a Cancel button.

import * as vscode from 'vscode';

export class TurnPanel implements vscode.Disposable {
  private readonly panel: vscode.WebviewPanel;
  private readonly cancelEmitter = new vscode.EventEmitter<void>();
  readonly onDidRequestCancel = this.cancelEmitter.event;
  private disposed = false;
  private readonly subs: vscode.Disposable[] = [];

  constructor(title: string, header: { prompt: string; session: string; model: string }) {
    this.panel = vscode.window.createWebviewPanel(
      'sessionLsp.turn',
      title,
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      { enableScripts: true, retainContextWhenHidden: true },
    );
    this.panel.webview.html = html(this.panel.webview, header);
    this.subs.push(
      this.panel.webview.onDidReceiveMessage((m) => {
        if (m && m.type === 'cancel') {
          this.cancelEmitter.fire();
        }
      }),
      this.panel.onDidDispose(() => {
        this.disposed = true;
        this.cancelEmitter.fire();
      }),
    );
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  private post(msg: unknown): void {
    if (!this.disposed) {
      void this.panel.webview.postMessage(msg);
    }
  }

  setReply(text: string): void {
    this.post({ type: 'reply', text });
  }

  setStatus(text: string): void {
    this.post({ type: 'status', text });
  }

  finish(status: string, ok: boolean): void {
    this.post({ type: 'done', text: status, ok });
  }

  dispose(): void {
    this.subs.forEach((d) => d.dispose());
    this.cancelEmitter.dispose();
    if (!this.disposed) {
      this.panel.dispose();
    }
  }
}

function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

function html(webview: vscode.Webview, h: { prompt: string; session: string; model: string }): string {
  const nonce = Math.random().toString(36).slice(2) + Math.random().toString(36).slice(2);
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${webview.cspSource} 'unsafe-inline'; script-src 'nonce-${nonce}';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<style>
 body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 0 16px 16px; }
 .meta { color: var(--vscode-descriptionForeground); font-size: 0.9em; margin: 8px 0; }
 .prompt { border-left: 3px solid var(--vscode-textLink-foreground); padding: 4px 10px; white-space: pre-wrap; margin: 8px 0 16px; }
 #reply { white-space: pre-wrap; font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size);
   background: var(--vscode-textCodeBlock-background); padding: 10px; min-height: 3em; border-radius: 3px; }
 #status { margin-top: 10px; }
 #status.ok { color: var(--vscode-testing-iconPassed, #3c3); }
 #status.fail { color: var(--vscode-errorForeground); }
 button { margin-top: 12px; background: var(--vscode-button-background); color: var(--vscode-button-foreground);
   border: none; padding: 4px 14px; cursor: pointer; }
 button:disabled { opacity: 0.5; cursor: default; }
</style></head>
<body>
<h2>Agent turn</h2>
<div class="meta">Session: <span id="session">${esc(h.session)}</span> · Model: ${esc(h.model)}</div>
<div class="prompt" id="prompt">${esc(h.prompt)}</div>
<div id="reply" aria-live="polite"></div>
<div id="status" class="meta">Running…</div>
<button id="cancel">Cancel</button>
<script nonce="${nonce}">
 const vscode = acquireVsCodeApi();
 const reply = document.getElementById('reply');
 const status = document.getElementById('status');
 const cancel = document.getElementById('cancel');
 cancel.addEventListener('click', () => { cancel.disabled = true; status.textContent = 'Cancelling…'; vscode.postMessage({ type: 'cancel' }); });
 window.addEventListener('message', (e) => {
   const m = e.data || {};
   if (m.type === 'reply') { reply.textContent = m.text; }
   else if (m.type === 'status') { status.textContent = m.text; }
   else if (m.type === 'done') { status.textContent = m.text; status.className = 'meta ' + (m.ok ? 'ok' : 'fail'); cancel.style.display = 'none'; }
 });
</script>
</body></html>`;
}
