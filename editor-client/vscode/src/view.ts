// The "Claude Sessions" tree view: projects -> sessions -> branch points, subagents, forks.

import * as vscode from 'vscode';
import { SessionServer } from './client';
import { formatBytes, formatCount, isPending, messageCountLabel, relativeTime } from './lib/format';
import { mdCode, mdText } from './lib/markdownText';
import { transcriptUri } from './storeDocuments';
import { SessionInfo, SessionsListResult, SessionTreeResult, Methods } from './lib/protocol';
import {
  allSessions,
  branchPointsFromTree,
  buildSessionTree,
  childrenOf,
  Node,
  ProjectNode,
  SessionNode,
  sessionsById,
} from './lib/tree';

interface CachedTree {
  modified: string;
  tree: SessionTreeResult;
}

export class SessionsProvider implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<Node | undefined | void>();
  readonly onDidChangeTreeData = this.emitter.event;
  private projects: ProjectNode[] = [];
  private sessionsById = new Map<string, SessionInfo>();
  private nodesById = new Map<string, SessionNode>();
  private readonly trees = new Map<string, CachedTree>();
  private readonly pending = new Set<string>();
  private refreshTimer: NodeJS.Timeout | undefined;
  private loaded: Promise<void> | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  view: vscode.TreeView<Node> | undefined;
  /** Bumped on every reload; the e2e test and logs read it. */
  generation = 0;
  /** sessions/didChange notifications seen: a partial listing that missed one lists again. */
  private changes = 0;

  constructor(private readonly server: SessionServer) {
    this.disposables.push(
      server.onDidChangeSessions((p) => {
        this.server.log(
          `sessions/didChange: ${(p.sessionIds ?? []).length} changed, ${(p.removed ?? []).length} removed`,
        );
        this.changes++;
        for (const id of [...(p.sessionIds ?? []), ...(p.removed ?? [])]) {
          this.trees.delete(id);
        }
        this.scheduleRefresh(200);
      }),
      (() => {
        const timer = setInterval(() => this.repaint(), 60_000);
        return { dispose: () => clearInterval(timer) };
      })(),
      server.onDidChangeState((s) => {
        if (s === 'running' || s === 'missing' || s === 'failed') {
          this.scheduleRefresh(0);
        }
      }),
    );
  }

  /** Redraws the items (relative times age) without asking the server again. */
  repaint(): void {
    if (this.view?.visible) {
      this.emitter.fire();
    }
  }

  scheduleRefresh(delay = 0): void {
    clearTimeout(this.refreshTimer);
    this.refreshTimer = setTimeout(() => this.refresh(), delay);
  }

  refresh(): void {
    this.loaded = undefined;
    this.emitter.fire();
  }

  /** Sessions from the last listing (loads one if there is none). */
  async sessions(): Promise<SessionInfo[]> {
    if (!this.loaded) {
      this.loaded = this.load();
    }
    await this.loaded;
    return [...this.sessionsById.values()];
  }

  session(id: string): SessionInfo | undefined {
    return this.sessionsById.get(id);
  }

  /** The view node of a session, or of one of its branch points once they are known. */
  async findNode(sessionId: string, branchUuid?: string): Promise<Node | undefined> {
    await this.sessions();
    const node = this.nodesById.get(sessionId);
    if (!node || !branchUuid) {
      return node;
    }
    if (node.branchPoints === undefined) {
      const tree = await this.tree(sessionId);
      if (tree) {
        node.branchPoints = branchPointsFromTree(node.info, tree);
        this.emitter.fire(node);
      }
    }
    return node.branchPoints?.find((b) => b.uuid === branchUuid) ?? node;
  }

  async tree(id: string): Promise<SessionTreeResult | undefined> {
    const info = this.sessionsById.get(id);
    const cached = this.trees.get(id);
    if (cached && (!info || cached.modified === (info.modified ?? ''))) {
      return cached.tree;
    }
    try {
      const tree = await this.server.request<SessionTreeResult>(Methods.tree, { sessionId: id });
      if (tree && Array.isArray(tree.nodes)) {
        this.trees.set(id, { modified: info?.modified ?? '', tree });
        return tree;
      }
    } catch (e) {
      this.server.log(`sessions/tree ${id}: ${e instanceof Error ? e.message : String(e)}`);
    }
    return undefined;
  }

  private async load(): Promise<void> {
    const setMessage = (m: string | undefined) => {
      if (this.view) {
        this.view.message = m;
      }
    };
    if (this.server.currentState === 'missing' || this.server.currentState === 'failed') {
      this.projects = [];
      this.sessionsById.clear();
      this.nodesById.clear();
      setMessage(undefined); // the welcome view says how to install the server
      return;
    }
    try {
      // partial: on a cold start the sessions show at once; counts fill in when sessions/didChange comes
      const changesBefore = this.changes;
      const result = await this.server.request<SessionsListResult>(Methods.list, { partial: true });
      const sessions = Array.isArray(result?.sessions) ? result.sessions : [];
      this.sessionsById = sessionsById(sessions);
      this.projects = buildSessionTree(sessions);
      this.nodesById = new Map(allSessions(this.projects).map((n) => [n.info.sessionId, n]));
      for (const n of this.nodesById.values()) {
        const cached = this.trees.get(n.info.sessionId);
        if (cached && cached.modified === (n.info.modified ?? '')) {
          n.branchPoints = branchPointsFromTree(n.info, cached.tree);
        }
      }
      this.generation++;
      setMessage(undefined);
      const partial = sessions.filter((s) => s.partial).length;
      this.server.log(
        `listed ${sessions.length} sessions in ${this.projects.length} projects` +
          (partial ? ` (${partial} partial until the index is ready)` : ''),
      );
      if (result?.partial && this.changes !== changesBefore) {
        this.scheduleRefresh(0); // the index completed while this answer was on its way
      }
      void this.fetchBranchPoints();
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      this.server.log(`sessions/list failed: ${msg}`);
      this.projects = [];
      setMessage(`Could not list sessions: ${msg}`);
    }
  }

  /** Asks sessions/tree for each session (two at a time) to mark branch points. */
  private async fetchBranchPoints(): Promise<void> {
    const todo = [...this.nodesById.values()].filter(
      (n) => n.branchPoints === undefined && !this.pending.has(n.info.sessionId),
    ).slice(0, 300);
    const worker = async () => {
      for (let n = todo.shift(); n; n = todo.shift()) {
        const id = n.info.sessionId;
        this.pending.add(id);
        try {
          const tree = await this.tree(id);
          const current = this.nodesById.get(id);
          if (tree && current === n) {
            n.branchPoints = branchPointsFromTree(n.info, tree);
            if (n.branchPoints.length > 0) {
              this.emitter.fire(n);
            }
          }
        } finally {
          this.pending.delete(id);
        }
      }
    };
    await Promise.all([worker(), worker()]);
  }

  async getChildren(element?: Node): Promise<Node[]> {
    if (!element) {
      if (!this.loaded) {
        this.loaded = this.load();
      }
      await this.loaded;
      return this.projects;
    }
    return childrenOf(element);
  }

  getParent(element: Node): Node | undefined {
    switch (element.kind) {
      case 'project':
        return undefined;
      case 'session': {
        const src = element.isFork ? element.info.forkedFrom?.sessionId : undefined;
        if (src && this.nodesById.has(src)) {
          return this.nodesById.get(src);
        }
        return this.projects.find((p) => p.sessions.includes(element));
      }
      default:
        return this.nodesById.get(element.session.sessionId);
    }
  }

  getTreeItem(node: Node): vscode.TreeItem {
    switch (node.kind) {
      case 'project': {
        const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.Expanded);
        item.id = node.id;
        item.iconPath = new vscode.ThemeIcon(node.store ? 'database' : 'folder');
        item.description = formatCount(node.sessions.length, 'session');
        item.tooltip = node.store
          ? `${node.label}\nIn the session store ${node.store} (read-only: pull a session to continue it)`
          : `${node.label}\n${node.projectDir}`;
        item.contextValue = 'project';
        return item;
      }
      case 'session': {
        const s = node.info;
        const hasChildren = node.forks.length + node.subagents.length + (node.branchPoints?.length ?? 0) > 0;
        const item = new vscode.TreeItem(
          s.title?.trim() || s.sessionId,
          hasChildren ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None,
        );
        item.id = node.id;
        const bp = node.branchPoints?.length ?? 0;
        item.description = [
          relativeTime(s.modified ?? s.created),
          formatBytes(s.sizeBytes),
          messageCountLabel(s),
          formatCount(bp || null, 'branch point'), // words: a fork glyph (U+2442) is missing from common UI fonts
        ]
          .filter(Boolean)
          .join(' · ');
        item.iconPath = new vscode.ThemeIcon(node.isFork ? 'repo-forked' : 'comment-discussion');
        // a store session is read-only here: no resume, turn or fork on it (see package.json menus)
        item.contextValue = s.readOnly ? 'session.store' : node.isFork ? 'session.fork' : 'session';
        item.tooltip = sessionTooltip(s, bp);
        item.resourceUri = transcriptUri(s.uri ?? s.path);
        item.command = { command: 'sessionLsp.openTranscript', title: 'Open Transcript', arguments: [node] };
        return item;
      }
      case 'subagent': {
        const a = node.info;
        const item = new vscode.TreeItem(a.agentType ? `${a.agentType} subagent` : 'subagent');
        item.id = node.id;
        item.description = a.agentId;
        item.iconPath = new vscode.ThemeIcon('robot');
        item.contextValue = 'subagent';
        item.tooltip = `Subagent ${a.agentId}${a.agentType ? ` (${a.agentType})` : ''}\n${a.path}`;
        item.command = { command: 'sessionLsp.openTranscript', title: 'Open Transcript', arguments: [node] };
        return item;
      }
      case 'branchPoint': {
        const item = new vscode.TreeItem(`Branch point: ${node.label}`);
        item.id = node.id;
        item.description = `line ${node.line + 1}${node.children > 1 ? ` · ${node.children} branches` : ''}`;
        item.iconPath = new vscode.ThemeIcon('git-branch');
        item.contextValue = 'branchPoint';
        item.tooltip = `A row with more than one child (${node.uuid}), line ${node.line + 1}. Fork here to continue from it.`;
        item.command = { command: 'sessionLsp.openTranscript', title: 'Open Transcript', arguments: [node] };
        return item;
      }
    }
  }

  dispose(): void {
    clearTimeout(this.refreshTimer);
    this.disposables.forEach((d) => d.dispose());
    this.emitter.dispose();
  }
}

function sessionTooltip(s: SessionInfo, branchPoints: number): vscode.MarkdownString {
  const md = new vscode.MarkdownString();
  md.appendMarkdown(`**${mdText(s.title?.trim() || s.sessionId)}**\n\n`);
  const rows: [string, string | undefined][] = [
    ['Session', mdCode(s.sessionId)],
    ['Directory', s.cwd ? mdCode(s.cwd) : undefined],
    ['Branch', s.gitBranch ? mdCode(s.gitBranch) : undefined],
    ['Created', s.created ? mdText(s.created) : undefined],
    ['Modified', s.modified ? mdText(`${s.modified} (${relativeTime(s.modified)})`) : undefined],
    ['Messages', isPending(s, 'messageCount') ? '… (still indexing)' : s.messageCount != null ? String(s.messageCount) : undefined],
    ['Size', formatBytes(s.sizeBytes) || undefined],
    ['Forked from', s.forkedFrom ? mdCode(s.forkedFrom.sessionId) : undefined],
    ['Subagents', s.subagents?.length ? String(s.subagents.length) : undefined],
    ['Branch points', branchPoints ? String(branchPoints) : undefined],
  ];
  for (const [k, v] of rows) {
    if (v) {
      md.appendMarkdown(`${k}: ${v}  \n`);
    }
  }
  return md;
}
