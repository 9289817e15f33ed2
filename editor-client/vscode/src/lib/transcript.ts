// Reading rows of a transcript (JSONL) without the server: the row's uuid at a line,
// and the line of a uuid.

function rowUuid(line: string): string | undefined {
  const t = line.trim();
  if (!t.startsWith('{')) {
    return undefined;
  }
  try {
    const v = JSON.parse(t);
    return v && typeof v === 'object' && typeof v.uuid === 'string' ? v.uuid : undefined;
  } catch {
    return undefined;
  }
}

/** The uuid of the row at `line` (0-based), or of the nearest row above it that has one. */
export function uuidAtLine(lines: readonly string[], line: number): { uuid: string; line: number } | undefined {
  for (let i = Math.min(line, lines.length - 1); i >= 0; i--) {
    const u = rowUuid(lines[i]);
    if (u) {
      return { uuid: u, line: i };
    }
  }
  return undefined;
}

/** The 0-based line of the row whose own "uuid" is `uuid`, or -1. */
export function findUuidLine(text: string, uuid: string): number {
  const needle = `"uuid":"${uuid}"`;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].includes(needle) && rowUuid(lines[i]) === uuid) {
      return i;
    }
  }
  // Unusual spacing ("uuid": "...") still parses.
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].includes(uuid) && rowUuid(lines[i]) === uuid) {
      return i;
    }
  }
  return -1;
}

/** The session id recorded in a transcript's rows (first row that has one). */
export function sessionIdInText(text: string): string | undefined {
  for (const line of text.split('\n', 50)) {
    const m = /"sessionId"\s*:\s*"([^"]+)"/.exec(line);
    if (m) {
      return m[1];
    }
  }
  return undefined;
}

export interface Prompt {
  line: number;
  uuid?: string;
  text: string;
}

/** The prompts a person typed: user rows whose content is text (not tool results, meta rows or command wrappers). */
export function promptsInText(text: string, max = 500): Prompt[] {
  const out: Prompt[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length && out.length < max; i++) {
    const l = lines[i];
    if (!l.includes('"type":"user"') && !l.includes('"type": "user"')) {
      continue;
    }
    let row: any;
    try {
      row = JSON.parse(l);
    } catch {
      continue;
    }
    if (!row || row.type !== 'user' || row.isMeta || row.isCompactSummary || !row.message) {
      continue;
    }
    const c = row.message.content;
    let t = '';
    if (typeof c === 'string') {
      t = c;
    } else if (Array.isArray(c)) {
      if (c.some((b: any) => b && b.type === 'tool_result')) {
        continue;
      }
      t = c
        .filter((b: any) => b && b.type === 'text' && typeof b.text === 'string')
        .map((b: any) => b.text)
        .join('\n');
    }
    t = t.trim();
    if (!t || t.startsWith('<')) {
      continue;
    }
    out.push({ line: i, uuid: typeof row.uuid === 'string' ? row.uuid : undefined, text: t });
  }
  return out;
}
