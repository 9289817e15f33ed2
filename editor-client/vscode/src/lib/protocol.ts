// Shapes of session-lsp's custom requests and notifications (see the server's protocol spec).

export interface SubagentInfo {
  agentId: string;
  path: string;
  agentType?: string | null;
}

export interface ForkOrigin {
  sessionId: string;
  messageUuid?: string | null;
}

export interface SessionInfo {
  sessionId: string;
  path: string;
  projectDir: string;
  cwd?: string | null;
  title?: string | null;
  created?: string | null;
  modified?: string | null;
  messageCount?: number | null;
  leafUuid?: string | null;
  forkedFrom?: ForkOrigin | null;
  subagents?: SubagentInfo[] | null;
  sizeBytes?: number | null;
  gitBranch?: string | null;
}

export interface SessionsListParams {
  projectsDir?: string;
  cwd?: string;
}

export interface SessionsListResult {
  sessions: SessionInfo[];
}

export interface TreeNode {
  uuid: string;
  parentUuid?: string | null;
  type?: string | null;
  line: number;
  label?: string | null;
  onChain?: boolean;
}

export interface SessionTreeResult {
  sessionId: string;
  nodes: TreeNode[];
  branchPoints: string[];
  subagents?: unknown;
  forks?: unknown;
}

/** A content block as stored in a transcript (Messages API form). */
export interface ContentBlock {
  type: string;
  text?: string;
  thinking?: string;
  name?: string;
  id?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: string | ContentBlock[];
  is_error?: boolean;
  source?: { type?: string; media_type?: string; data?: string; url?: string };
  [key: string]: unknown;
}

export interface ChainMessage {
  role: string;
  content: string | ContentBlock[];
}

export interface SessionChainResult {
  sessionId: string;
  path: string;
  leafUuid?: string | null;
  uuids?: string[];
  messages: ChainMessage[];
}

export interface ForkParams {
  sessionId: string;
  atUuid?: string;
  title?: string;
}

export interface ForkResult {
  sessionId: string;
  path: string;
}

export interface RunTurnParams {
  sessionId?: string;
  prompt: string;
  cwd?: string;
  provider?: string;
  model?: string;
  workDoneToken?: string | number;
}

export interface RunTurnResult {
  sessionId: string;
  path: string;
  /** The uuids of the rows the turn appended (a count in older servers). */
  appended?: string[] | number;
  text?: string;
  usage?: Record<string, unknown> | null;
}

export interface DidChangeParams {
  sessionIds?: string[];
  removed?: string[];
}

export const Methods = {
  list: 'sessions/list',
  tree: 'sessions/tree',
  chain: 'sessions/chain',
  resume: 'sessions/resume',
  fork: 'sessions/fork',
  runTurn: 'sessions/runTurn',
  didChange: 'sessions/didChange',
} as const;
