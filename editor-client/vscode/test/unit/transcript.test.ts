import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { findUuidLine, sessionIdInText, uuidAtLine } from '../../src/lib/transcript';

const lines = [
  '{"type":"queue-operation","sessionId":"S1"}',
  '{"parentUuid":null,"type":"user","uuid":"u1","sessionId":"S1"}',
  '{"parentUuid":"u1","type":"assistant","uuid":"a1"}',
  'garbage {',
  '{"type":"summary","leafUuid":"a1"}',
  '{"parentUuid":"a1", "type":"user", "uuid": "u2"}',
];
const text = lines.join('\n') + '\n';

test('uuid at a line, or the nearest row above', () => {
  assert.deepEqual(uuidAtLine(lines, 2), { uuid: 'a1', line: 2 });
  assert.deepEqual(uuidAtLine(lines, 3), { uuid: 'a1', line: 2 });
  assert.deepEqual(uuidAtLine(lines, 4), { uuid: 'a1', line: 2 });
  assert.deepEqual(uuidAtLine(lines, 99), { uuid: 'u2', line: 5 });
  assert.equal(uuidAtLine(lines, 0), undefined);
});

test('line of a uuid ignores parentUuid and leafUuid mentions', () => {
  assert.equal(findUuidLine(text, 'a1'), 2);
  assert.equal(findUuidLine(text, 'u1'), 1);
  assert.equal(findUuidLine(text, 'u2'), 5);
  assert.equal(findUuidLine(text, 'nope'), -1);
});

test('session id recorded in rows', () => {
  assert.equal(sessionIdInText(text), 'S1');
  assert.equal(sessionIdInText('{}'), undefined);
});
