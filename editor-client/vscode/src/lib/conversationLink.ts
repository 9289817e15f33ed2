// A message of a session as a link that opens the conversation at it: `claude-conversation:<transcript
// path>?line=<0-based line>`. Workspace-symbol results carry such links, so picking one (Ctrl+T) opens
// the conversation panel at the message instead of the raw transcript line. Pure, so unit-tested.

export const CONVERSATION_SCHEME = 'claude-conversation';

export interface ConversationLink {
  /** The transcript's path. */
  path: string;
  /** 0-based line of the row in the transcript. */
  line: number;
}

/** The parts of the link's URI (for vscode.Uri.from). */
export function linkUri(link: ConversationLink): { scheme: string; path: string; query: string } {
  return { scheme: CONVERSATION_SCHEME, path: link.path, query: `line=${link.line}` };
}

/** The link a URI of our scheme names, or undefined for any other URI or a malformed one. */
export function parseLink(uri: { scheme: string; path: string; query: string }): ConversationLink | undefined {
  if (uri.scheme !== CONVERSATION_SCHEME || !uri.path.endsWith('.jsonl')) {
    return undefined;
  }
  const m = /^line=(\d{1,9})$/.exec(uri.query);
  return m ? { path: uri.path, line: Number(m[1]) } : undefined;
}
