// Session id validation: ids end up in a shell command line (`claude --resume <id>`),
// so only the exact form Claude Code writes is accepted.

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isValidSessionId(id: unknown): id is string {
  return typeof id === 'string' && UUID_RE.test(id);
}

/** Returns the id, or throws an Error that says what was wrong with it. */
export function requireSessionId(id: unknown): string {
  if (isValidSessionId(id)) {
    return id;
  }
  const shown = typeof id === 'string' ? JSON.stringify(id.length > 60 ? id.slice(0, 60) + '…' : id) : String(id);
  throw new Error(`Not a valid Claude session id: ${shown} (expected a UUID like 123e4567-e89b-12d3-a456-426614174000)`);
}

/** The shell command that resumes a session; the id is validated first. */
export function resumeCommandLine(id: unknown, claude = 'claude'): string {
  return `${claude} --resume ${requireSessionId(id)}`;
}

/** The session id a transcript path names (`.../<sessionId>.jsonl`), or undefined. */
export function sessionIdFromPath(p: string): string | undefined {
  const base = p.split(/[\\/]/).pop() ?? '';
  const m = /^(.*)\.jsonl$/i.exec(base);
  if (m && isValidSessionId(m[1])) {
    return m[1];
  }
  return undefined;
}

/** Why a session cannot be resumed in a terminal here, or undefined: a store's session is not in the projects
 * folder (claude would not find it), and the cwd its rows record is whoever wrote to the store's choice. */
export function resumeRefusal(info: { storeId?: string | null; readOnly?: boolean } | undefined): string | undefined {
  return info?.storeId || info?.readOnly ? 'a session of a session store cannot be resumed here: pull it first' : undefined;
}
