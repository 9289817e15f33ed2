// What the conversation webview may ask of the extension. The page posts "reveal" (open a transcript at a line)
// and "subagent" (render a subagent's conversation) with a path in them; the extension acts on such a message only
// when it put that path (and line) into the page itself. Every piece of transcript text is escaped before it reaches
// the page, so today only the page's own script posts; this is the second wall, should markup ever get through.
// Pure, so unit-tested.

import type { ConversationItem } from './protocol';

/** The targets one panel rendered: the lines of each transcript shown and the subagent transcripts it links. */
export class RenderedTargets {
  private readonly lines = new Set<string>();
  private readonly subagents = new Set<string>();

  /** `path` is the panel's own transcript: a reveal with no path is of it. */
  constructor(readonly path: string) {}

  /** Forgets everything (the page's chat was replaced). */
  clear(): void {
    this.lines.clear();
    this.subagents.clear();
  }

  /** Records what renderItems(items, { path }) put in the page. */
  add(items: ConversationItem[], path: string = this.path): void {
    for (const item of items) {
      this.lines.add(key(path, item.line));
      if (item.subagent?.path) {
        this.subagents.add(item.subagent.path);
      }
    }
  }

  hasLine(path: string, line: number): boolean {
    return this.lines.has(key(path, line));
  }

  hasSubagent(path: string): boolean {
    return this.subagents.has(path);
  }
}

function key(path: string, line: number): string {
  return JSON.stringify([path, line]);
}

export type WebviewMessage =
  | { type: 'reveal'; path: string; line: number }
  | { type: 'subagent'; path: string; id: string }
  | { type: 'hidden'; on: boolean }
  | { type: 'more' }
  | { type: 'branch'; leafUuid: string };

/** What to do with a message from the page: a message, `{ refused }` (naming a target the page was not given,
 * to log), or undefined (not a message of ours: ignored). */
export function acceptMessage(m: unknown, targets: RenderedTargets): WebviewMessage | { refused: string } | undefined {
  if (!m || typeof m !== 'object') {
    return undefined;
  }
  const msg = m as Record<string, unknown>;
  switch (msg.type) {
    case 'reveal': {
      if (typeof msg.line !== 'number') {
        return undefined;
      }
      const path = typeof msg.path === 'string' && msg.path ? msg.path : targets.path;
      return targets.hasLine(path, msg.line)
        ? { type: 'reveal', path, line: msg.line }
        : { refused: `reveal of ${JSON.stringify(path)} line ${msg.line}` };
    }
    case 'subagent':
      if (typeof msg.path !== 'string') {
        return undefined;
      }
      return targets.hasSubagent(msg.path)
        ? { type: 'subagent', path: msg.path, id: String(msg.id ?? '') }
        : { refused: `subagent ${JSON.stringify(msg.path)}` };
    case 'hidden':
      return { type: 'hidden', on: !!msg.on };
    case 'more':
      return { type: 'more' };
    case 'branch':
      return typeof msg.leafUuid === 'string' ? { type: 'branch', leafUuid: msg.leafUuid } : undefined;
    default:
      return undefined;
  }
}
