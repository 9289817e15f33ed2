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

import { promptsInText } from '../../src/lib/transcript';

test('prompts a person typed', () => {
  const rows = [
    { type: 'queue-operation', content: 'x' },
    { type: 'user', uuid: 'a', message: { role: 'user', content: 'READ login.ts' } },
    { type: 'user', uuid: 'b', message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 'x' }] } },
    { type: 'user', uuid: 'c', isMeta: true, message: { role: 'user', content: 'meta' } },
    { type: 'user', uuid: 'd', message: { role: 'user', content: '<command-name>/compact</command-name>' } },
    { type: 'user', uuid: 'e', message: { role: 'user', content: [{ type: 'text', text: '继续检查' }] } },
    { type: 'assistant', uuid: 'f', message: { role: 'assistant', content: [{ type: 'text', text: 'no' }] } },
  ];
  const text = rows.map((r) => JSON.stringify(r)).join('\n') + '\nnot json "type":"user"\n';
  assert.deepEqual(promptsInText(text), [
    { line: 1, uuid: 'a', text: 'READ login.ts' },
    { line: 5, uuid: 'e', text: '继续检查' },
  ]);
});
