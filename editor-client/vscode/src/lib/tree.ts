// Builds the "Claude Sessions" tree (projects -> sessions -> forks / subagents / branch points)
// from a sessions/list result. No VS Code here: the view maps these nodes to TreeItems.

import type { SessionInfo, SubagentInfo, SessionTreeResult } from './protocol';
import { projectLabel, oneLine } from './format';

export interface ProjectNode {
  kind: 'project';
  id: string;
  projectDir: string;
  label: string;
  /** The session store holding this project's sessions (its name); undefined for the local folder. */
  store?: string;
  modified: string;
  sessions: SessionNode[];
}

export interface SessionNode {
  kind: 'session';
  id: string;
  info: SessionInfo;
  /** true when this session was forked from another listed session and sits under it. */
  isFork: boolean;
  forks: SessionNode[];
  subagents: SubagentNode[];
  /** Branch points of this session's message tree, once sessions/tree has been asked. */
  branchPoints?: BranchPointNode[];
}

export interface SubagentNode {
  kind: 'subagent';
  id: string;
  info: SubagentInfo;
  session: SessionInfo;
}

export interface BranchPointNode {
  kind: 'branchPoint';
  id: string;
  uuid: string;
  line: number;
  label: string;
  /** How many children the row has (the branches). */
  children: number;
  session: SessionInfo;
}

export type Node = ProjectNode | SessionNode | SubagentNode | BranchPointNode;

function modifiedKey(s: { modified?: string | null; created?: string | null }): number {
  const t = Date.parse(s.modified ?? s.created ?? '');
  return Number.isNaN(t) ? 0 : t;
}

function byModifiedDesc(a: SessionNode, b: SessionNode): number {
  return modifiedKey(b.info) - modifiedKey(a.info) || a.info.sessionId.localeCompare(b.info.sessionId);
}

/**
 * Each listed session by its id, as the tree shows it: the first of an id (sessions/list gives the local folder's
 * before any store's). A store's session of the same id (anyone who can write to the store can take any id) is not the
 * one the person has open: a later entry winning made Run Agent Turn on a local transcript run in the store (its rows,
 * pushing what the turn read there) and Resume in Terminal use the cwd the store's rows record.
 */
export function sessionsById(sessions: SessionInfo[]): Map<string, SessionInfo> {
  const out = new Map<string, SessionInfo>();
  for (const s of sessions) {
    if (s && typeof s.sessionId === 'string' && !out.has(s.sessionId)) {
      out.set(s.sessionId, s);
    }
  }
  return out;
}

export function buildSessionTree(sessions: SessionInfo[]): ProjectNode[] {
  const nodes = new Map<string, SessionNode>();
  for (const info of sessions) {
    if (!info || typeof info.sessionId !== 'string' || nodes.has(info.sessionId)) {
      continue;
    }
    nodes.set(info.sessionId, {
      kind: 'session',
      id: `session:${info.sessionId}`,
      info,
      isFork: false,
      forks: [],
      subagents: (info.subagents ?? []).map((sa) => ({
        kind: 'subagent' as const,
        id: `subagent:${info.sessionId}:${sa.agentId}`,
        info: sa,
        session: info,
      })),
    });
  }

  // A fork goes under its source when the source is listed and no cycle results.
  const parentOf = new Map<string, string>();
  for (const node of nodes.values()) {
    const src = node.info.forkedFrom?.sessionId;
    if (!src || src === node.info.sessionId || !nodes.has(src)) {
      continue;
    }
    let cur: string | undefined = src;
    let cycle = false;
    const seen = new Set<string>([node.info.sessionId]);
    while (cur !== undefined) {
      if (seen.has(cur)) {
        cycle = true;
        break;
      }
      seen.add(cur);
      cur = parentOf.get(cur);
    }
    if (!cycle) {
      parentOf.set(node.info.sessionId, src);
    }
  }

  const roots: SessionNode[] = [];
  for (const node of nodes.values()) {
    const parent = parentOf.get(node.info.sessionId);
    if (parent) {
      node.isFork = true;
      nodes.get(parent)!.forks.push(node);
    } else {
      roots.push(node);
    }
  }
  for (const node of nodes.values()) {
    node.forks.sort(byModifiedDesc);
  }

  const projects = new Map<string, ProjectNode>();
  for (const node of roots.sort(byModifiedDesc)) {
    const dir = node.info.projectDir ?? '';
    const store = node.info.storeId ? node.info.store ?? node.info.storeId : undefined;
    const key = node.info.storeId ? `store:${node.info.storeId}:${dir}` : dir;
    let p = projects.get(key);
    if (!p) {
      // roots are sorted newest first, so the first session names the project.
      const label = projectLabel(dir, node.info.cwd);
      p = {
        kind: 'project',
        id: `project:${key}`,
        projectDir: dir,
        label: store ? `${label} — ${store}` : label,
        modified: node.info.modified ?? node.info.created ?? '',
        sessions: [],
        store,
      };
      projects.set(key, p);
    }
    p.sessions.push(node);
  }
  return [...projects.values()].sort(
    (a, b) => (Date.parse(b.modified) || 0) - (Date.parse(a.modified) || 0) || a.label.localeCompare(b.label),
  );
}

/** Branch-point nodes for a session from its sessions/tree result, in file order. */
export function branchPointsFromTree(session: SessionInfo, tree: SessionTreeResult): BranchPointNode[] {
  const byUuid = new Map(tree.nodes.map((n) => [n.uuid, n]));
  const childCount = new Map<string, number>();
  for (const n of tree.nodes) {
    if (n.parentUuid) {
      childCount.set(n.parentUuid, (childCount.get(n.parentUuid) ?? 0) + 1);
    }
  }
  const out: BranchPointNode[] = [];
  for (const uuid of tree.branchPoints ?? []) {
    const n = byUuid.get(uuid);
    out.push({
      kind: 'branchPoint',
      id: `branch:${session.sessionId}:${uuid}`,
      uuid,
      line: n?.line ?? 0,
      label: oneLine(n?.label || n?.type || uuid, 60),
      children: childCount.get(uuid) ?? 0,
      session,
    });
  }
  return out.sort((a, b) => a.line - b.line);
}

export function childrenOf(node: Node): Node[] {
  switch (node.kind) {
    case 'project':
      return node.sessions;
    case 'session':
      return [...(node.branchPoints ?? []), ...node.subagents, ...node.forks];
    default:
      return [];
  }
}

/** Every session node (roots and forks) in display order. */
export function allSessions(projects: ProjectNode[]): SessionNode[] {
  const out: SessionNode[] = [];
  const walk = (s: SessionNode) => {
    out.push(s);
    s.forks.forEach(walk);
  };
  projects.forEach((p) => p.sessions.forEach(walk));
  return out;
}
