// Small formatting helpers: relative times, byte sizes, message counts, search snippets.

const UNITS: [string, number][] = [
  ['year', 365 * 24 * 3600],
  ['month', 30 * 24 * 3600],
  ['week', 7 * 24 * 3600],
  ['day', 24 * 3600],
  ['hour', 3600],
  ['minute', 60],
];

/** "just now", "5 minutes ago", "in 2 hours", "3 days ago"; "" for missing or unparsable input. */
export function relativeTime(iso: string | null | undefined, now: Date | number = Date.now()): string {
  if (!iso) {
    return '';
  }
  const t = Date.parse(iso);
  if (Number.isNaN(t)) {
    return '';
  }
  const nowMs = typeof now === 'number' ? now : now.getTime();
  const diff = Math.round((nowMs - t) / 1000);
  const abs = Math.abs(diff);
  if (abs < 45) {
    return 'just now';
  }
  for (const [name, secs] of UNITS) {
    if (abs >= secs) {
      const n = Math.floor(abs / secs);
      const unit = n === 1 ? name : name + 's';
      return diff >= 0 ? `${n} ${unit} ago` : `in ${n} ${unit}`;
    }
  }
  // 45..59 seconds
  return diff >= 0 ? '1 minute ago' : 'in 1 minute';
}

/** 0 B, 999 B, 1.2 KB, 34 KB, 5.6 MB (base 1024). */
export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n) || n < 0) {
    return '';
  }
  if (n < 1024) {
    return `${Math.round(n)} B`;
  }
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

export function formatCount(n: number | null | undefined, singular: string, plural = singular + 's'): string {
  if (n === null || n === undefined || !Number.isFinite(n)) {
    return '';
  }
  return `${n} ${n === 1 ? singular : plural}`;
}

/** Whether a sessions/list item's `field` is not known yet (the server is still indexing). */
export function isPending(s: { pending?: string[] | null }, field: string): boolean {
  return Array.isArray(s.pending) && s.pending.includes(field);
}

/** A session's message count for the sessions view: "12 msgs", or "… msgs" while it is not counted yet. */
export function messageCountLabel(s: { messageCount?: number | null; pending?: string[] | null }): string {
  return isPending(s, 'messageCount') ? '… msgs' : formatCount(s.messageCount, 'msg');
}

/** A project folder name like "-Users-me-shop" shown as "/Users/me/shop" when no cwd is known. */
export function projectLabel(projectDir: string, cwd?: string | null): string {
  if (cwd) {
    return cwd;
  }
  const base = projectDir.split(/[\\/]/).filter(Boolean).pop() ?? projectDir;
  return base.startsWith('-') ? base.replace(/-/g, '/') : base;
}

/** Collapses whitespace and cuts a string to max characters with an ellipsis. */
export function oneLine(s: string | null | undefined, max = 80): string {
  const flat = (s ?? '').replace(/\s+/g, ' ').trim();
  return flat.length > max ? flat.slice(0, max - 1) + '…' : flat;
}

/** "appended 3 rows" from a runTurn result's `appended` (uuids, or a count). */
export function appendedRows(appended: unknown): string {
  const n = Array.isArray(appended) ? appended.length : typeof appended === 'number' ? appended : undefined;
  return n === undefined ? 'done' : `appended ${formatCount(n, 'row')}`;
}

/** A search snippet without the server's `[...]` match marks (the editors highlight matches themselves). */
export function unmarkSnippet(snippet: string): string {
  return snippet.replace(/\[([^[\]]*)\]/g, '$1');
}

// VS Code draws `$(name)` in a quick pick item's label, description and detail (and in an input box's prompt) as
// the icon `name`; `\$(name)` it draws as the text `$(name)` (its own escapeIcons). The pattern is VS Code's
// (ThemeIcon.iconNameExpression, iconModifierExpression): a `$(` it would not take for an icon is left alone, as a
// backslash before it would show. Tree item labels draw no icons, so their text goes in as it is.
const ICON = /\$\([A-Za-z0-9-]+(?:~[A-Za-z]+)?\)/g;

/** Transcript text (a title, a prompt, a cwd) for a quick pick item's label, description or detail: shown as
 * written, a `$(zap)` in it as those characters, not as an icon. */
export function pickText(s: string): string {
  return s.replace(ICON, (m) => '\\' + m);
}

/** Transcript text for an input box's prompt, which also makes `[text](command:...)` a link that runs the command
 * when clicked: a zero-width space after the `]` keeps it text. */
export function promptText(s: string): string {
  return pickText(s).replace(/\]\(/g, ']\u200b(');
}
