import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { isValidSessionId, requireSessionId, resumeCommandLine, sessionIdFromPath } from '../../src/lib/ids';

const ID = '11111111-1111-4111-8111-111111111111';

test('accepts UUIDs in either case', () => {
  assert.equal(isValidSessionId(ID), true);
  assert.equal(isValidSessionId('D864ACD2-D28B-43CE-B430-2208A10860FE'), true);
});

test('rejects anything that could smuggle shell syntax', () => {
  for (const bad of [
    '',
    `${ID}; rm -rf /`,
    `${ID} `,
    ` ${ID}`,
    `$(touch x)`,
    `${ID}\n`,
    '11111111-1111-4111-8111-11111111111',
    '11111111-1111-4111-8111-1111111111111',
    '1111111g-1111-4111-8111-111111111111',
    '../11111111-1111-4111-8111-111111111111',
    undefined,
    null,
    42,
    {},
  ]) {
    assert.equal(isValidSessionId(bad), false, String(bad));
  }
});

test('requireSessionId says what is wrong', () => {
  assert.equal(requireSessionId(ID), ID);
  assert.throws(() => requireSessionId('x; ls'), /Not a valid Claude session id: "x; ls"/);
  assert.throws(() => requireSessionId('a'.repeat(200)), /…/);
});

test('resume command line', () => {
  assert.equal(resumeCommandLine(ID), `claude --resume ${ID}`);
  assert.throws(() => resumeCommandLine('`id`'));
});

test('session id from a transcript path', () => {
  assert.equal(sessionIdFromPath(`/home/u/.claude/projects/-home-u-x/${ID}.jsonl`), ID);
  assert.equal(sessionIdFromPath(`C:\\Users\\u\\.claude\\projects\\x\\${ID}.jsonl`), ID);
  assert.equal(sessionIdFromPath(`/p/${ID}/subagents/agent-a88b3ce23b875db07.jsonl`), undefined);
  assert.equal(sessionIdFromPath(`/p/${ID}.json`), undefined);
});

test('a store session is never resumed in a terminal (its cwd is the store writer\'s); a local one is', async () => {
  const { resumeRefusal } = await import('../../src/lib/ids');
  assert.match(resumeRefusal({ storeId: 'team', readOnly: true }) ?? '', /pull it first/);
  assert.match(resumeRefusal({ readOnly: true }) ?? '', /pull it first/);
  assert.equal(resumeRefusal({}), undefined);
  assert.equal(resumeRefusal(undefined), undefined);
});
