import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import {
  appendedRows,
  formatBytes,
  formatCount,
  isPending,
  messageCountLabel,
  oneLine,
  pickText,
  projectLabel,
  promptText,
  relativeTime,
  unmarkSnippet,
} from '../../src/lib/format';

const NOW = Date.parse('2026-11-29T12:00:00Z');
const ago = (s: number) => new Date(NOW - s * 1000).toISOString();

test('relative time in the past', () => {
  assert.equal(relativeTime(ago(5), NOW), 'just now');
  assert.equal(relativeTime(ago(50), NOW), '1 minute ago');
  assert.equal(relativeTime(ago(60), NOW), '1 minute ago');
  assert.equal(relativeTime(ago(125), NOW), '2 minutes ago');
  assert.equal(relativeTime(ago(3600), NOW), '1 hour ago');
  assert.equal(relativeTime(ago(3 * 3600 + 59), NOW), '3 hours ago');
  assert.equal(relativeTime(ago(86400), NOW), '1 day ago');
  assert.equal(relativeTime(ago(8 * 86400), NOW), '1 week ago');
  assert.equal(relativeTime(ago(40 * 86400), NOW), '1 month ago');
  assert.equal(relativeTime(ago(800 * 86400), NOW), '2 years ago');
});

test('relative time in the future and bad input', () => {
  assert.equal(relativeTime(new Date(NOW + 7200 * 1000).toISOString(), NOW), 'in 2 hours');
  assert.equal(relativeTime(undefined, NOW), '');
  assert.equal(relativeTime(null, NOW), '');
  assert.equal(relativeTime('not a date', NOW), '');
  assert.equal(relativeTime(ago(10), new Date(NOW)), 'just now');
});

test('byte sizes', () => {
  assert.equal(formatBytes(0), '0 B');
  assert.equal(formatBytes(1023), '1023 B');
  assert.equal(formatBytes(1024), '1.0 KB');
  assert.equal(formatBytes(1536), '1.5 KB');
  assert.equal(formatBytes(34 * 1024), '34 KB');
  assert.equal(formatBytes(5.6 * 1024 * 1024), '5.6 MB');
  assert.equal(formatBytes(undefined), '');
  assert.equal(formatBytes(-1), '');
});

test('counts, labels, one-liners', () => {
  assert.equal(formatCount(1, 'msg'), '1 msg');
  assert.equal(formatCount(3, 'msg'), '3 msgs');
  assert.equal(formatCount(null, 'msg'), '');
  assert.equal(projectLabel('/x/projects/-Users-me-shop'), '/Users/me/shop');
  assert.equal(projectLabel('/x/projects/-Users-me-shop', '/Users/me/shop-2'), '/Users/me/shop-2');
  assert.equal(projectLabel('plain'), 'plain');
  assert.equal(oneLine('  a\n\n b  '), 'a b');
  assert.equal(oneLine('abcdefghij', 5), 'abcd…');
});

test('rows a turn appended', () => {
  assert.equal(appendedRows(['a', 'b', 'c']), 'appended 3 rows');
  assert.equal(appendedRows(1), 'appended 1 row');
  assert.equal(appendedRows(undefined), 'done');
});

test('a search snippet loses its match marks, not other brackets', () => {
  assert.equal(unmarkSnippet('prompt: What [colour] is this [square]?'), 'prompt: What colour is this square?');
  assert.equal(unmarkSnippet('…a [login] in arr[[0]]'), '…a login in arr[0]');
});

test('a partial session (the server still indexing) shows its count as pending, never as 0 or undefined', () => {
  const partial = { messageCount: null, partial: true, pending: ['messageCount', 'usage', 'forkedFrom'] };
  assert.equal(messageCountLabel(partial), '… msgs');
  assert.equal(isPending(partial, 'usage'), true);
  assert.equal(isPending(partial, 'title'), false);
  assert.equal(messageCountLabel({ messageCount: 12, pending: [] }), '12 msgs');
  assert.equal(messageCountLabel({ messageCount: 1 }), '1 msg');
  assert.equal(messageCountLabel({ messageCount: null }), '');
  assert.equal(messageCountLabel({ messageCount: 0, pending: null }), '0 msgs');
  assert.equal(isPending({ pending: null }, 'messageCount'), false);
});

test('transcript text in a quick pick shows $(name) as written, not as an icon', () => {
  // VS Code draws $(zap) as an icon and \$(zap) as the text $(zap)
  assert.equal(pickText('fix $(zap) now'), 'fix \\$(zap) now');
  assert.equal(pickText('$(sync~spin) and \\$(x)'), '\\$(sync~spin) and \\\\$(x)');
  // what VS Code would not take for an icon stays as it is (a backslash there would show)
  assert.equal(pickText('costs $(5 dollars) or $()'), 'costs $(5 dollars) or $()');
  assert.equal(pickText('plain title'), 'plain title');
  // an input box prompt also makes [text](command:...) a link
  assert.equal(promptText('Continue “[go](command:x) $(zap)”'), 'Continue “[go]\u200b(command:x) \\$(zap)”');
});
