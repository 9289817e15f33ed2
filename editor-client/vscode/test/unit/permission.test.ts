import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { CHOICES, decisionOf, permissionPrompt } from '../../src/lib/permission';

const ask = {
  sessionId: '11111111-1111-4111-8111-111111111111',
  tool: 'Bash',
  toolUseId: 'toolu_1',
  input: { command: 'rm -rf build' },
  cwd: '/work/shop',
  preview: 'rm -rf build',
};

test('the prompt shows the command, where it runs and the three choices', () => {
  const p = permissionPrompt(ask);
  assert.equal(p.message, 'Claude wants to run a command (Bash)');
  assert.ok(p.detail.startsWith('rm -rf build\n\nin /work/shop'));
  assert.deepEqual([...p.choices], ['Allow once', 'Allow for this session', 'Deny']);
});

test('an edit shows its diff; a huge preview is cut', () => {
  const p = permissionPrompt({ ...ask, tool: 'Edit', preview: `edit a.py:\n-old\n+new\n${'x'.repeat(5000)}` });
  assert.equal(p.message, 'Claude wants to edit a file (Edit)');
  assert.ok(p.detail.includes('-old\n+new'));
  assert.ok(p.detail.length < 4200);
});

test('each button maps to a decision; dismissing denies', () => {
  assert.equal(decisionOf(CHOICES[0]), 'allow');
  assert.equal(decisionOf(CHOICES[1]), 'allowSession');
  assert.equal(decisionOf(CHOICES[2]), 'deny');
  assert.equal(decisionOf(undefined), 'deny');
  assert.equal(decisionOf('something else'), 'deny');
});

test('the folder it runs in is shown as written, on one line', () => {
  // the turn's folder is the session's recorded cwd (transcript data): a newline or a right-to-left override in a
  // folder's name would draw another folder, or a line of its own, in the dialog
  const p = permissionPrompt({ ...ask, cwd: '/work/\u202ekcatta\nsession 00000000-0000-4000-8000-000000000000' });
  assert.ok(p.detail.endsWith(`in /work/⟨U+202E⟩kcatta⟨U+000A⟩session 00000000-0000-4000-8000-000000000000\nsession ${ask.sessionId}`), p.detail);
});
