import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { CONVERSATION_SCHEME, linkUri, parseLink } from '../../src/lib/conversationLink';

const PATH = '/home/me/.claude/projects/-work/11111111-1111-4111-8111-111111111111.jsonl';

test('a link survives the round trip through its URI parts', () => {
  const parts = linkUri({ path: PATH, line: 41 });
  assert.deepEqual(parts, { scheme: CONVERSATION_SCHEME, path: PATH, query: 'line=41' });
  assert.deepEqual(parseLink(parts), { path: PATH, line: 41 });
});

test('other URIs and malformed links name no message', () => {
  for (const uri of [
    { scheme: 'file', path: PATH, query: 'line=3' },
    { scheme: CONVERSATION_SCHEME, path: PATH, query: '' },
    { scheme: CONVERSATION_SCHEME, path: PATH, query: 'line=-1' },
    { scheme: CONVERSATION_SCHEME, path: PATH, query: 'line=3&x=1' },
    { scheme: CONVERSATION_SCHEME, path: '/etc/passwd', query: 'line=3' },
  ]) {
    assert.equal(parseLink(uri), undefined, JSON.stringify(uri));
  }
});
