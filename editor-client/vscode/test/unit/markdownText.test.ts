import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { mdCode, mdText, writtenOut } from '../../src/lib/markdownText';

// What VS Code would make of a tooltip: its renderer turns these into markup, so none may survive unescaped.
const HOSTILE = [
  '![seen](https://attacker.invalid/pixel.png)',
  '[resume here](https://attacker.invalid/phish)',
  '<img src="https://attacker.invalid/x.png">',
  '``` `x` ![a](https://attacker.invalid/a.png)',
  '`',
  ' a ',
  'line\non the resume chain',
  'bidi \u202e and \u001b]52;c;eA==\u0007',
];

/** The text of an inline code span as CommonMark reads it (the fence's run length, one space off each end). */
function codeSpanText(md: string): string {
  const fence = /^`+/.exec(md)![0];
  assert.ok(md.endsWith(fence), md);
  const inner = md.slice(fence.length, md.length - fence.length);
  assert.ok(!inner.includes(fence), `the value closes its span early: ${md}`);
  return inner.startsWith(' ') && inner.endsWith(' ') && inner.trim() !== '' ? inner.slice(1, -1) : inner;
}

test('a code span holds any value whole', () => {
  for (const value of HOSTILE) {
    assert.equal(codeSpanText(mdCode(value)), writtenOut(value), value);
  }
});

test('text has every Markdown punctuation escaped and no raw control character', () => {
  for (const value of HOSTILE) {
    const md = mdText(value);
    assert.doesNotMatch(md, /(^|[^\\])[!\[\]<>`(]/, md);
    assert.doesNotMatch(md, /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/, md);
    assert.equal(md.replace(/\\(.)/g, '$1'), writtenOut(value));
  }
});

test('control and format characters are written out, the rest kept', () => {
  assert.equal(writtenOut('a\nb\u202ec\u0007 é 中 😀'), 'a⟨U+000A⟩b⟨U+202E⟩c⟨U+0007⟩ é 中 😀');
});
