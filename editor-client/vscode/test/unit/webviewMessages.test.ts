import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { renderItems } from '../../src/lib/conversationHtml';
import { acceptMessage, RenderedTargets } from '../../src/lib/webviewMessages';
import type { ConversationItem } from '../../src/lib/protocol';

const MAIN = '/p/-w/s1.jsonl';
const SUB = '/p/-w/s1/subagents/agent-a1.jsonl';
const base = { uuid: 'u', segment: 0, hidden: false };
const items: ConversationItem[] = [
  { ...base, id: 'a', line: 3, kind: 'user', text: 'hi' },
  { ...base, id: 'b', line: 7, kind: 'tool', name: 'Agent', input: {}, subagent: { agentId: 'a1', path: SUB } },
];

function rendered(): RenderedTargets {
  const t = new RenderedTargets(MAIN);
  t.add(items);
  return t;
}

test('a reveal of a line the page was given is accepted, of the panel transcript when the path is empty', () => {
  assert.deepEqual(acceptMessage({ type: 'reveal', line: 3, path: '' }, rendered()), { type: 'reveal', path: MAIN, line: 3 });
  // every data-line the page's messages carry is a target
  const lines = [...renderItems(items, { path: MAIN }).matchAll(/class="msg[^"]*" data-line="(\d+)"/g)].map((m) => Number(m[1]));
  assert.deepEqual(lines, [3, 7]);
  for (const line of lines) {
    assert.equal((acceptMessage({ type: 'reveal', line, path: '' }, rendered()) as { type?: string }).type, 'reveal');
  }
});

test('a reveal of a path or line the page was not given is refused', () => {
  const t = rendered();
  assert.ok('refused' in (acceptMessage({ type: 'reveal', line: 0, path: '/home/me/.ssh/id_rsa' }, t) ?? {}));
  assert.ok('refused' in (acceptMessage({ type: 'reveal', line: 4, path: '' }, t) ?? {}));
  assert.ok('refused' in (acceptMessage({ type: 'reveal', line: 3, path: SUB }, t) ?? {})); // not expanded yet
  assert.equal(acceptMessage({ type: 'reveal', line: '3', path: '' }, t), undefined);
});

test('a subagent is opened only for a path the page links, and its lines then reveal', () => {
  const t = rendered();
  assert.deepEqual(acceptMessage({ type: 'subagent', path: SUB, id: 'b:sub' }, t), { type: 'subagent', path: SUB, id: 'b:sub' });
  assert.ok('refused' in (acceptMessage({ type: 'subagent', path: '/etc/passwd', id: 'x' }, t) ?? {}));
  assert.ok('refused' in (acceptMessage({ type: 'subagent', path: MAIN, id: 'x' }, t) ?? {}));
  t.add([{ ...base, id: 's', line: 2, kind: 'assistant', text: 'ok' }], SUB);
  assert.deepEqual(acceptMessage({ type: 'reveal', line: 2, path: SUB }, t), { type: 'reveal', path: SUB, line: 2 });
  // a new page forgets what the old one held
  t.clear();
  t.add(items.slice(0, 1));
  assert.ok('refused' in (acceptMessage({ type: 'reveal', line: 2, path: SUB }, t) ?? {}));
  assert.ok('refused' in (acceptMessage({ type: 'subagent', path: SUB, id: 'b:sub' }, t) ?? {}));
});

test('messages without a path pass; anything else is ignored', () => {
  const t = rendered();
  assert.deepEqual(acceptMessage({ type: 'hidden', on: 1 }, t), { type: 'hidden', on: true });
  assert.deepEqual(acceptMessage({ type: 'more' }, t), { type: 'more' });
  assert.deepEqual(acceptMessage({ type: 'branch', leafUuid: 'l1' }, t), { type: 'branch', leafUuid: 'l1' });
  assert.equal(acceptMessage({ type: 'open', path: MAIN }, t), undefined);
  assert.equal(acceptMessage(null, t), undefined);
});
