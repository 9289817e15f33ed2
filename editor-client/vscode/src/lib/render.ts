// Renders a resumed chain (sessions/resume or sessions/chain) as readable Markdown.

import type { ChainMessage, ContentBlock } from './protocol';

export interface RenderOptions {
  title?: string | null;
  sessionId?: string;
  path?: string;
  /** Tool results and tool inputs longer than this are cut (with a note). */
  maxToolChars?: number;
}

/** A fence that is longer than any backtick run inside `text`. */
export function fenceFor(text: string): string {
  let longest = 0;
  for (const m of text.matchAll(/`+/g)) {
    longest = Math.max(longest, m[0].length);
  }
  return '`'.repeat(Math.max(3, longest + 1));
}

export function codeBlock(text: string, lang = ''): string {
  const f = fenceFor(text);
  return `${f}${lang}\n${text.replace(/\n$/, '')}\n${f}`;
}

function cut(text: string, max: number): string {
  if (text.length <= max) {
    return text;
  }
  return text.slice(0, max) + `\n… [${text.length - max} more characters]`;
}

function escapeInline(s: string): string {
  return s.replace(/[`*_<>[\]]/g, (c) => '\\' + c);
}

function toolResultText(content: ContentBlock['content']): string {
  if (content === undefined || content === null) {
    return '';
  }
  if (typeof content === 'string') {
    return content;
  }
  if (!Array.isArray(content)) {
    return JSON.stringify(content, null, 2);
  }
  return content
    .map((b) => {
      if (b && b.type === 'text' && typeof b.text === 'string') {
        return b.text;
      }
      if (b && b.type === 'image') {
        return '[image]';
      }
      return JSON.stringify(b);
    })
    .join('\n');
}

function renderBlock(b: ContentBlock | string, max: number): string {
  if (typeof b === 'string') {
    return b;
  }
  if (!b || typeof b !== 'object') {
    return '';
  }
  switch (b.type) {
    case 'text':
      return typeof b.text === 'string' ? b.text : '';
    case 'thinking':
      return `<details><summary>Thinking</summary>\n\n${(b.thinking ?? '').trim()}\n\n</details>`;
    case 'redacted_thinking':
      return '_[redacted thinking]_';
    case 'tool_use':
    case 'server_tool_use': {
      const input = cut(JSON.stringify(b.input ?? {}, null, 2), max);
      return `**Tool call:** \`${escapeInline(String(b.name ?? '?'))}\`${b.id ? ` _(${escapeInline(b.id)})_` : ''}\n\n${codeBlock(input, 'json')}`;
    }
    case 'tool_result': {
      const text = cut(toolResultText(b.content), max);
      const head = `**Tool result**${b.is_error ? ' (error)' : ''}${b.tool_use_id ? ` _(${escapeInline(b.tool_use_id)})_` : ''}`;
      return text.trim() ? `${head}\n\n${codeBlock(text)}` : `${head}: _(empty)_`;
    }
    case 'image':
      return `_[image${b.source?.media_type ? `: ${b.source.media_type}` : ''}]_`;
    case 'document':
      return '_[document]_';
    default:
      return `_[${escapeInline(String(b.type))} block]_\n\n${codeBlock(cut(JSON.stringify(b, null, 2), max), 'json')}`;
  }
}

function heading(m: ChainMessage): string {
  const blocks = Array.isArray(m.content) ? m.content : [];
  if (m.role === 'user' && blocks.length > 0 && blocks.every((b) => b && b.type === 'tool_result')) {
    return '### Tool result' + (blocks.length > 1 ? 's' : '');
  }
  if (m.role === 'user') {
    return '### User';
  }
  if (m.role === 'assistant') {
    return '### Assistant';
  }
  const role = m.role || 'message';
  return `### ${escapeInline(role.charAt(0).toUpperCase() + role.slice(1))}`;
}

export function renderConversation(messages: ChainMessage[], opts: RenderOptions = {}): string {
  const max = opts.maxToolChars ?? 4000;
  const out: string[] = [];
  out.push(`# ${opts.title ? opts.title.replace(/\s+/g, ' ').trim() : 'Claude session'}`);
  const meta: string[] = [];
  if (opts.sessionId) {
    meta.push(`Session \`${opts.sessionId}\``);
  }
  meta.push(`${messages.length} message${messages.length === 1 ? '' : 's'} in the resumed chain`);
  out.push('', `_${meta.join(' · ')}_`);
  if (opts.path) {
    out.push('', `Transcript: \`${opts.path}\``);
  }
  for (const m of messages) {
    out.push('', '---', '', heading(m), '');
    const blocks = typeof m.content === 'string' ? [m.content] : Array.isArray(m.content) ? m.content : [];
    const parts = blocks.map((b) => renderBlock(b, max)).filter((s) => s.trim() !== '');
    out.push(parts.length ? parts.join('\n\n') : '_(empty)_');
  }
  if (messages.length === 0) {
    out.push('', '_The chain is empty._');
  }
  return out.join('\n') + '\n';
}

/** Plain text of a message (text blocks only), for search and titles. */
export function messageText(m: ChainMessage): string {
  if (typeof m.content === 'string') {
    return m.content;
  }
  return (m.content ?? [])
    .filter((b) => b && b.type === 'text' && typeof b.text === 'string')
    .map((b) => b.text as string)
    .join('\n');
}
