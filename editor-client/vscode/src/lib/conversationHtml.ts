// Renders sessions/conversation items as the chat the conversation panel shows: Markdown replies,
// thinking and tool calls folded in <details>, edits as diffs, hidden items marked, compactions
// as separators, branch switchers, subagent calls that expand. Pure string building, all escaped.

import { escapeHtml as esc, markdown } from './markdown';
import type { ChainMessage, ConversationItem, DiffHunk, ToolResultInfo } from './protocol';

export interface RenderContext {
  /** The transcript the items come from (a click reveals `line` in it). */
  path: string;
  /** Turns an ISO time into what the header shows (injected so tests are stable). */
  time?: (iso: string) => string;
}

const INPUT_CHARS = 4000;

function attr(s: string | number | null | undefined): string {
  return esc(String(s ?? ''));
}

export function tokens(usage: ConversationItem['usage']): string {
  if (!usage) {
    return '';
  }
  const parts: string[] = [];
  const n = (x: number) => x.toLocaleString('en-US');
  if (usage.input !== undefined) parts.push(`in ${n(usage.input)}`);
  if (usage.cacheRead) parts.push(`cache ${n(usage.cacheRead)}`);
  if (usage.output !== undefined) parts.push(`out ${n(usage.output)}`);
  return parts.join(' · ');
}

function header(item: ConversationItem, label: string, ctx: RenderContext): string {
  const bits = [`<span class="who">${esc(label)}</span>`];
  if (item.time) bits.push(`<span class="time" title="${attr(item.time)}">${esc(ctx.time ? ctx.time(item.time) : item.time)}</span>`);
  if (item.model) bits.push(`<span class="model">${esc(item.model)}</span>`);
  const tok = tokens(item.usage);
  if (tok) bits.push(`<span class="tokens">${esc(tok)}</span>`);
  bits.push(`<span class="line">line ${item.line + 1}</span>`);
  return `<div class="head">${bits.join('')}</div>`;
}

/** One short line that says what a tool call did. */
export function toolSummary(name: string, input: Record<string, unknown>): string {
  const pick = ['file_path', 'command', 'pattern', 'path', 'url', 'description', 'prompt', 'query', 'notebook_path'];
  for (const key of pick) {
    const v = input[key];
    if (typeof v === 'string' && v.trim()) {
      const one = v.replace(/\s+/g, ' ').trim();
      return one.length > 100 ? one.slice(0, 99) + '…' : one;
    }
  }
  return '';
}

export function diffHtml(filePath: string, hunks: DiffHunk[], created: boolean): string {
  const rows: string[] = [];
  for (const h of hunks) {
    // the numbers are the transcript's (toolUseResult.structuredPatch): text like the rest, whatever they hold
    rows.push(`<div class="hunk">@@ -${attr(h.oldStart)},${attr(h.oldLines)} +${attr(h.newStart)},${attr(h.newLines)} @@</div>`);
    let oldNo = Number(h.oldStart) || 0;
    let newNo = Number(h.newStart) || 0;
    for (const line of h.lines) {
      const sign = line.charAt(0);
      const kind = sign === '+' ? 'add' : sign === '-' ? 'del' : 'ctx';
      const left = kind === 'add' ? '' : String(oldNo++);
      const right = kind === 'del' ? '' : String(newNo++);
      rows.push(
        `<div class="dl ${kind}"><span class="ln">${left}</span><span class="ln">${right}</span><span class="tx">${esc(line)}</span></div>`,
      );
    }
  }
  const title = `${created ? 'Created' : 'Edited'} ${filePath}`;
  return `<div class="diff" data-file="${attr(filePath)}"><div class="diff-title">${esc(title)}</div>${rows.join('')}</div>`;
}

function images(list: ConversationItem['images']): string {
  return (list ?? [])
    .map((img) =>
      img.data && /^image\/(png|jpeg|gif|webp)$/.test(img.mediaType)
        ? `<img class="img" alt="image" src="data:${img.mediaType};base64,${attr(img.data)}">`
        : `<div class="img-ref">[image ${esc(img.url ?? img.mediaType)}]</div>`,
    )
    .join('');
}

function resultHtml(r: ToolResultInfo | null | undefined): string {
  if (!r) {
    return '<div class="result pending">No result recorded.</div>';
  }
  const more = r.truncated ? `<div class="note">… ${r.length! - r.text.length} more characters in the transcript</div>` : '';
  return (
    `<div class="result${r.isError ? ' error' : ''}" data-line="${r.line}">` +
    `<div class="result-head">${r.isError ? 'Error' : 'Result'} · line ${r.line + 1}</div>` +
    `<pre>${esc(r.text)}</pre>${more}${images(r.images)}</div>`
  );
}

function toolHtml(item: ConversationItem): string {
  const input = item.input ?? {};
  const summary = toolSummary(item.name ?? '', input);
  const r = item.result;
  const status = !r ? '<span class="status open">…</span>' : r.isError ? '<span class="status err">✗</span>' : '<span class="status ok">✓</span>';
  const json = JSON.stringify(input, null, 2);
  const body: string[] = [];
  if (item.diff) {
    body.push(diffHtml(item.diff.filePath, item.diff.hunks, item.diff.created));
  } else {
    body.push(`<pre class="input">${esc(json.length > INPUT_CHARS ? json.slice(0, INPUT_CHARS) + '\n…' : json)}</pre>`);
  }
  if (item.subagent?.path) {
    body.push(
      `<details class="subagent" data-subagent="${attr(item.subagent.path)}" data-id="${attr(item.id)}:sub">` +
        `<summary>Subagent ${esc(item.subagent.agentId)}: its conversation</summary><div class="subagent-body">Loading…</div></details>`,
    );
  }
  body.push(resultHtml(r));
  return (
    `<details class="tool" data-id="${attr(item.id)}"><summary>${status}<span class="tool-name">${esc(item.name ?? '')}</span>` +
    `<span class="tool-arg">${esc(summary)}</span>${item.diff ? `<span class="badge">diff</span>` : ''}</summary>${body.join('')}</details>`
  );
}

function hiddenLabel(item: ConversationItem): string {
  switch (item.kind) {
    case 'attachment':
      return `attachment · ${item.attachmentType ?? ''}${item.role ? ` (sent as ${item.role})` : ''}`;
    case 'reminder':
      return 'system reminder';
    case 'effort':
      return 'effort carrier (empty system message)';
    case 'system':
      return `system · ${item.subtype ?? ''}`;
    default:
      return `${item.kind} (meta)`;
  }
}

function itemBody(item: ConversationItem, ctx: RenderContext): { cls: string; html: string } {
  switch (item.kind) {
    case 'user':
      if (item.command) {
        return { cls: 'user command', html: header(item, 'You', ctx) + `<div class="cmd">${esc(item.command)}</div>` };
      }
      if (item.commandOutput !== undefined) {
        return { cls: 'cmd-out', html: `<pre>${esc(item.commandOutput)}</pre>` };
      }
      return {
        cls: 'user' + (item.origin ? ' notification' : ''),
        html: header(item, item.origin ? `Notification (${item.origin})` : 'You', ctx) + `<div class="md">${markdown(item.text ?? '')}</div>` + images(item.images),
      };
    case 'assistant':
      return {
        cls: 'assistant' + (item.error ? ' error' : ''),
        html: header(item, 'Claude', ctx) + `<div class="md">${markdown(item.text ?? '')}</div>`,
      };
    case 'thinking':
      return {
        cls: 'thinking',
        html:
          `<details class="thinking" data-id="${attr(item.id)}"><summary>Thinking${item.redacted ? ' (redacted)' : ''}</summary>` +
          `<div class="md">${markdown(item.text ?? '')}</div></details>`,
      };
    case 'tool':
      return { cls: 'tool-item', html: toolHtml(item) };
    case 'compaction': {
      const pre = typeof item.preTokens === 'number' && item.preTokens ? `${item.preTokens.toLocaleString('en-US')} tokens before` : '';
      const bits = [typeof item.trigger === 'string' ? item.trigger : '', pre].filter(Boolean).join(', ');
      return { cls: 'compaction', html: `<div class="sep"><span>${esc(item.text ?? 'Conversation compacted')}${bits ? ` (${esc(bits)})` : ''}</span></div>` };
    }
    case 'summary':
      return {
        cls: 'summary',
        html: `<details class="summary" data-id="${attr(item.id)}"><summary>Summary of the earlier conversation</summary><div class="md">${markdown(item.text ?? '')}</div></details>`,
      };
    case 'branch': {
      const buttons = (item.branches ?? [])
        .map(
          (b, i) =>
            `<button class="branch-btn${b.current ? ' current' : ''}" data-leaf="${attr(b.leafUuid)}" title="leaf ${attr(b.leafUuid)} (line ${b.leafLine + 1})">` +
            `${i + 1}. ${esc(b.preview || '(no text)')}${b.current ? ' · shown' : ''}</button>`,
        )
        .join('');
      return { cls: 'branch', html: `<div class="branch-head">${(item.branches ?? []).length} branches from here</div>${buttons}` };
    }
    case 'system':
      return { cls: 'system', html: header(item, `System · ${item.subtype ?? ''}`, ctx) + `<pre>${esc(item.text ?? '')}</pre>` };
    default:
      return { cls: 'other', html: header(item, item.kind, ctx) + `<pre>${esc(item.text ?? '')}</pre>` };
  }
}

/** The items as HTML, oldest first. Hidden items are in the markup, marked `hidden-item`. */
export function renderItems(items: ConversationItem[], ctx: RenderContext): string {
  return items
    .map((item) => {
      if (item.hidden && item.kind !== 'user') {
        return (
          `<div class="msg hidden-item" data-line="${item.line}" data-id="${attr(item.id)}">` +
          `<details data-id="${attr(item.id)}"><summary>${esc(hiddenLabel(item))} · line ${item.line + 1}</summary><pre>${esc(item.text ?? '')}</pre></details></div>`
        );
      }
      const { cls, html } = itemBody(item, ctx);
      const hidden = item.hidden ? ' hidden-item' : '';
      return `<div class="msg ${cls}${hidden}" data-line="${item.line}" data-id="${attr(item.id)}" data-segment="${item.segment}">${html}</div>`;
    })
    .join('\n');
}

/** The exact API form (what the model saw on resume), one folded block per message. */
export function renderApiForm(messages: ChainMessage[]): string {
  const rows = messages.map((m, i) => {
    const content = typeof m.content === 'string' ? m.content : JSON.stringify(m.content, null, 2);
    const empty = !content || content === '[]';
    return (
      `<details class="api-msg" data-id="api-${i}"><summary>${i + 1}. ${esc(m.role)}${empty ? ' (empty: the effort carrier)' : ''}</summary>` +
      `<pre>${esc(content)}</pre></details>`
    );
  });
  return `<details class="apiform" data-id="apiform"><summary>What the model saw on resume: ${messages.length} messages (API form)</summary>${rows.join('')}</details>`;
}
