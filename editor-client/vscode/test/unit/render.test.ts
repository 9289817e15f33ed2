import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { codeBlock, fenceFor, messageText, renderConversation } from '../../src/lib/render';

test('fences outgrow backticks inside', () => {
  assert.equal(fenceFor('plain'), '```');
  assert.equal(fenceFor('has ``` inside'), '````');
  assert.equal(codeBlock('x\n', 'json'), '```json\nx\n```');
});

test('renders prompts, replies, tool calls and results', () => {
  const md = renderConversation(
    [
      { role: 'user', content: 'READ /Users/me/shop/src/auth/login.ts' },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'I should read it.' },
          { type: 'text', text: 'Reading the file.' },
          { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { file_path: '/Users/me/shop/src/auth/login.ts' } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'export function login() {}' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'echo: 你好' }] },
    ],
    { title: 'Read login', sessionId: '11111111-1111-4111-8111-111111111111' },
  );
  assert.match(md, /^# Read login\n/);
  assert.match(md, /Session `11111111-1111-4111-8111-111111111111` · 4 messages/);
  assert.match(md, /### User\n\nREAD \/Users\/me\/shop\/src\/auth\/login.ts/);
  assert.match(md, /<details><summary>Thinking<\/summary>\n\nI should read it./);
  assert.match(md, /\*\*Tool call:\*\* `Read` _\(toolu\\_1\)_\n\n```json\n\{\n  "file_path"/);
  assert.match(md, /### Tool result\n\n\*\*Tool result\*\* _\(toolu\\_1\)_\n\n```\nexport function login\(\) \{\}\n```/);
  assert.match(md, /echo: 你好/);
});

test('long tool output is cut, errors and odd blocks are shown', () => {
  const md = renderConversation(
    [
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 't', is_error: true, content: [{ type: 'text', text: 'x'.repeat(50) }] },
          { type: 'tool_result', tool_use_id: 'u', content: '' },
        ],
      },
      { role: 'assistant', content: [{ type: 'image', source: { media_type: 'image/png' } }, { type: 'weird', a: 1 }] },
      { role: 'assistant', content: [] },
    ],
    { maxToolChars: 10 },
  );
  assert.match(md, /^# Claude session/);
  assert.match(md, /### Tool results/);
  assert.match(md, /\(error\)/);
  assert.match(md, /xxxxxxxxxx\n… \[40 more characters\]/);
  assert.match(md, /: _\(empty\)_/);
  assert.match(md, /_\[image: image\/png\]_/);
  assert.match(md, /_\[weird block\]_/);
  assert.match(md, /### Assistant\n\n_\(empty\)_/);
});

test('an empty chain says so', () => {
  assert.match(renderConversation([]), /0 messages in the resumed chain[\s\S]*The chain is empty/);
});

test('message text keeps text blocks only', () => {
  assert.equal(messageText({ role: 'user', content: 'hi' }), 'hi');
  assert.equal(
    messageText({ role: 'assistant', content: [{ type: 'text', text: 'a' }, { type: 'tool_use', name: 'X' }, { type: 'text', text: 'b' }] }),
    'a\nb',
  );
});
