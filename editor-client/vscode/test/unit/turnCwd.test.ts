import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { turnCwd } from '../../src/lib/turnCwd';

const dirs = new Set(['/home/me/.ssh', '/home/me/src/shop', '/home/me']);
const isDirectory = (p: string): boolean => dirs.has(p);

test('a store session never runs in the cwd its rows record, even one that exists here', () => {
  const base = { hasSession: true, recordedCwd: '/home/me/.ssh', storeId: 'abc123', home: '/home/me', isDirectory };
  assert.deepEqual(turnCwd({ ...base, workspaceFolder: '/home/me/src/shop' }), {
    send: '/home/me/src/shop',
    shown: '/home/me/src/shop',
  });
  const none = turnCwd(base);
  assert.ok('error' in none && /window’s folder/.test(none.error), JSON.stringify(none));
});

test('a local session leaves its recorded cwd to the server; a new one runs in the folder', () => {
  const base = { home: '/home/me', workspaceFolder: '/home/me/src/shop', isDirectory };
  assert.deepEqual(turnCwd({ ...base, hasSession: true, recordedCwd: '/home/me/src/shop' }), {
    send: undefined,
    shown: '/home/me/src/shop',
  });
  assert.deepEqual(turnCwd({ ...base, hasSession: false }), { send: '/home/me/src/shop', shown: '/home/me/src/shop' });
  assert.deepEqual(turnCwd({ ...base, hasSession: true }), { send: '/home/me/src/shop', shown: '/home/me/src/shop' });
});
