// Shapes of session-lsp's custom requests and notifications (see the server's protocol spec).

export interface SubagentInfo {
  agentId: string;
  path: string;
  agentType?: string | null;
  /** For a store session's subagent: its read-only `session-store:` document. */
  uri?: string;
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
  /** Set for a session of a session store: the store's name (its URL without password). */
  store?: string;
  storeId?: string;
  /** The read-only `session-store:` document of a store session. */
  uri?: string;
  readOnly?: boolean;
  /** true while the server is still indexing: the fields named in `pending` are null until it re-lists. */
  partial?: boolean;
  pending?: string[] | null;
}

export interface SessionsListParams {
  projectsDir?: string;
  cwd?: string;
  /** Take partial items while the server's first index runs (then list again on sessions/didChange). */
  partial?: boolean;
}

export interface SessionsListResult {
  sessions: SessionInfo[];
  /** Whether any item is partial (only when `partial` was asked for). */
  partial?: boolean;
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
  /** The row resume starts from. */
  leafUuid?: string | null;
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

export interface DiffHunk {
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  lines: string[];
}

export interface ImageInfo {
  mediaType: string;
  data?: string;
  url?: string;
}

export interface ToolResultInfo {
  uuid: string;
  line: number;
  time?: string | null;
  isError: boolean;
  text: string;
  truncated?: boolean;
  length?: number;
  images?: ImageInfo[];
}

export interface BranchInfo {
  firstUuid: string;
  line: number;
  leafUuid: string;
  leafLine: number;
  time?: string | null;
  preview?: string;
  current: boolean;
}

/** One display item of sessions/conversation. */
export interface ConversationItem {
  id: string;
  kind: 'user' | 'assistant' | 'thinking' | 'tool' | 'attachment' | 'reminder' | 'effort' | 'compaction' | 'summary' | 'system' | 'branch' | 'other';
  uuid: string;
  line: number;
  time?: string | null;
  segment: number;
  hidden: boolean;
  text?: string;
  truncated?: boolean;
  length?: number;
  images?: ImageInfo[];
  model?: string | null;
  usage?: { input?: number; output?: number; cacheRead?: number; cacheCreation?: number } | null;
  messageId?: string | null;
  redacted?: boolean;
  error?: boolean;
  name?: string;
  toolUseId?: string;
  input?: Record<string, unknown>;
  result?: ToolResultInfo | null;
  diff?: { filePath: string; created: boolean; hunks: DiffHunk[] };
  subagent?: { agentId: string; path?: string | null };
  attachmentType?: string;
  role?: string | null;
  subtype?: string;
  trigger?: string | null;
  preTokens?: number | null;
  command?: string;
  commandOutput?: string;
  origin?: string;
  branches?: BranchInfo[];
}

export interface ConversationParams {
  sessionId?: string;
  path?: string;
  leafUuid?: string;
  limit?: number;
  before?: string;
  apiForm?: boolean;
  /** Open at this row (by uuid or 0-based line): the page reaches back to it. */
  atUuid?: string;
  atLine?: number;
}

export interface ConversationResult {
  sessionId: string;
  path: string;
  leafUuid?: string | null;
  items: ConversationItem[];
  hasMore: boolean;
  subagents?: SubagentInfo[];
  messages?: ChainMessage[];
  /** With atUuid/atLine: the item showing that row. */
  atId?: string | null;
  /** With atUuid/atLine: the row is on another branch than the default one (leafUuid names it). */
  atBranch?: boolean;
}

export const Methods = {
  list: 'sessions/list',
  tree: 'sessions/tree',
  chain: 'sessions/chain',
  resume: 'sessions/resume',
  fork: 'sessions/fork',
  conversation: 'sessions/conversation',
  runTurn: 'sessions/runTurn',
  permission: 'sessions/permission',
  didChange: 'sessions/didChange',
  storeDocument: 'sessions/storeDocument',
} as const;

/** The URI scheme of a store session's read-only document; its text comes from sessions/storeDocument. */
export const STORE_SCHEME = 'session-store';

export interface StoreDocumentResult {
  uri: string;
  text: string;
  store: string;
  readOnly: boolean;
}
