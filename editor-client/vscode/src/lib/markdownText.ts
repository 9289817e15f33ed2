// Values from a transcript (title, cwd, branch, ids, dates) put into Markdown that VS Code renders (a session's
// tooltip): shown as text, never obeyed. VS Code fetches `![](https://...)` when the tooltip opens and makes
// `[text](url)` a link, and a backtick in a cwd would end its code span. The same rule as the server's hovers
// (server/features/markdowntext.py): a code span whose fence is longer than any run of backticks in the value, or
// text with every ASCII punctuation character backslash-escaped (VS Code draws the escapes away; the hovers escape
// fewer, for Neovim); control and format characters are written out as ⟨U+001B⟩ and the value stays on one line.

const ESCAPED = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/gu;
const PUNCTUATION = /[!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]/g;

/** The value on one line, each control or format character written out. */
export function writtenOut(value: string): string {
  return value.replace(ESCAPED, (c) => `⟨U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}⟩`);
}

/** The value as Markdown text that renders as itself. */
export function mdText(value: string): string {
  return writtenOut(value).replace(PUNCTUATION, (c) => '\\' + c);
}

/** The value as an inline code span that holds it whole, whatever backticks it has. */
export function mdCode(value: string): string {
  let shown = writtenOut(value);
  const longest = Math.max(0, ...(shown.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(longest + 1);
  const padded = shown.startsWith(' ') && shown.endsWith(' ') && shown.trim() !== '';
  if (shown.startsWith('`') || shown.endsWith('`') || padded) {
    shown = ` ${shown} `; // CommonMark takes one space off each end: the value keeps its own
  }
  return `${fence}${shown}${fence}`;
}
