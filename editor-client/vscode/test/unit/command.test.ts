import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  accumulateProgress,
  effectiveProjectsDir,
  expandHome,
  isInside,
  missingServerMessage,
  resolveExecutable,
  serverLaunch,
  sessionLspVersion,
} from '../../src/lib/command';

test('server command from settings', () => {
  assert.deepEqual(serverLaunch({}), {
    command: 'session-lsp',
    args: ['serve', '--stdio'],
    display: 'session-lsp serve --stdio',
    viaPython: false,
  });
  const custom = serverLaunch({ serverCommand: ['/opt/x y/session-lsp', 'serve', '--stdio'] });
  assert.equal(custom.command, '/opt/x y/session-lsp');
  assert.equal(custom.display, "'/opt/x y/session-lsp' serve --stdio");
  const py = serverLaunch({ serverCommand: ['ignored'], pythonPath: '/venv/bin/python' });
  assert.deepEqual([py.command, ...py.args], ['/venv/bin/python', '-m', 'server.cli', 'serve', '--stdio']);
  assert.equal(py.viaPython, true);
  assert.equal(serverLaunch({ serverCommand: [] }).command, 'session-lsp');
  assert.equal(serverLaunch({ serverCommand: [''] }).command, 'session-lsp');
  assert.equal(serverLaunch({ serverCommand: [1, 2] }).command, 'session-lsp');
  assert.deepEqual(serverLaunch({ serverCommand: 'my-lsp serve  --stdio' }).args, ['serve', '--stdio']);
  assert.equal(serverLaunch({ pythonPath: '  ' }).viaPython, false);
});

test('home expansion', () => {
  assert.equal(expandHome('~', '/h'), '/h');
  assert.equal(expandHome('~/a', '/h'), path.join('/h', 'a'));
  assert.equal(expandHome('/a/~', '/h'), '/a/~');
});

test('finds executables on PATH and by path', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slsp-'));
  const exe = path.join(dir, 'fake-lsp');
  fs.writeFileSync(exe, '#!/bin/sh\n');
  fs.chmodSync(exe, 0o755);
  const plain = path.join(dir, 'not-exec');
  fs.writeFileSync(plain, '');
  fs.chmodSync(plain, 0o644);
  try {
    assert.equal(resolveExecutable('fake-lsp', `/nonexistent${path.delimiter}${dir}`), exe);
    assert.equal(resolveExecutable(exe, ''), exe);
    assert.equal(resolveExecutable('./fake-lsp', '', dir), exe);
    assert.equal(resolveExecutable('missing-lsp', dir), undefined);
    assert.equal(resolveExecutable('', dir), undefined);
    if (process.platform !== 'win32' && process.getuid?.() !== 0) {
      assert.equal(resolveExecutable('not-exec', dir), undefined);
    }
    assert.equal(resolveExecutable(dir, ''), undefined, 'a directory is not a program');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('the missing-server message says how to install', () => {
  const m = missingServerMessage(serverLaunch({ serverCommand: ['nope-lsp'] }), 'not found on the PATH');
  assert.match(m, /server command 'nope-lsp' was not found: not found on the PATH/);
  assert.match(m, /pip install/);
  assert.match(m, /sessionLsp\.serverCommand/);
  assert.match(missingServerMessage(serverLaunch({ pythonPath: '/py' })), /Python interpreter '\/py'/);
});

test('projects folder', () => {
  assert.equal(effectiveProjectsDir('', {}, '/h'), path.join('/h', '.claude', 'projects'));
  assert.equal(effectiveProjectsDir(undefined, { CLAUDE_CONFIG_DIR: '/c' }, '/h'), path.join('/c', 'projects'));
  assert.equal(effectiveProjectsDir('~/p', { CLAUDE_CONFIG_DIR: '/c' }, '/h'), path.join('/h', 'p'));
  assert.equal(isInside('/a/b/c.jsonl', '/a'), true);
  assert.equal(isInside('/a/../x.jsonl', '/a'), false);
  assert.equal(isInside('/ab/c.jsonl', '/a'), false);
  assert.equal(isInside('/a', '/a'), false);
});

test('progress text as deltas or as the whole reply so far', () => {
  let t = '';
  for (const d of ['echo', ': ', 'hi']) {
    t = accumulateProgress(t, d);
  }
  assert.equal(t, 'echo: hi');
  t = '';
  for (const c of ['echo', 'echo: ', 'echo: hi']) {
    t = accumulateProgress(t, c);
  }
  assert.equal(t, 'echo: hi');
  assert.equal(accumulateProgress('x', undefined), 'x');
});

import { rewriteLensCommand } from '../../src/lib/lenses';

test('server lenses run the extension commands', () => {
  const args = [{ sessionId: 'S', atUuid: 'u' }];
  assert.deepEqual(rewriteLensCommand({ title: 'Fork here', command: 'sessions/fork', arguments: args }), {
    title: 'Fork here',
    command: 'sessionLsp.forkSession',
    arguments: args,
  });
  assert.equal(rewriteLensCommand({ title: 'R', command: 'sessions/resume', arguments: [{ sessionId: 'S' }] })?.command, 'sessionLsp.resumeInTerminal');
  assert.equal(rewriteLensCommand({ title: '2 branches', command: 'sessions/tree', arguments: [{ sessionId: 'S', uuid: 'b' }] })?.command, 'sessionLsp.revealInView');
  assert.deepEqual(rewriteLensCommand({ title: 'x', command: 'sessions/fork', arguments: ['junk'] })?.arguments, []);
  assert.deepEqual(rewriteLensCommand({ title: 'x', command: 'other.cmd' }), { title: 'x', command: 'other.cmd' });
  assert.equal(rewriteLensCommand(undefined), undefined);
});

test('only session-lsp --version output identifies our server', () => {
  assert.equal(sessionLspVersion('session-lsp 0.1.0\n'), '0.1.0');
  assert.equal(sessionLspVersion('session-lsp 1.2.3.dev4+g1234'), '1.2.3.dev4+g1234');
  assert.equal(sessionLspVersion(''), undefined);
  assert.equal(sessionLspVersion('usage: server [-h]'), undefined);
  assert.equal(sessionLspVersion('other-tool 1.0'), undefined);
});

test('a workspace cannot choose the program the extension starts, nor a store the server connects to', () => {
  // `machine` settings are read from the user's settings only: a cloned repository's .vscode/settings.json
  // naming a program of its own (serverCommand, pythonPath) is ignored, not run when the folder opens, and so is
  // a store of its own (stores), which libpq would hand the team database's PGPASSWORD.
  const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', '..', '..', 'package.json'), 'utf8'));
  const props = manifest.contributes.configuration.properties;
  for (const key of ['sessionLsp.serverCommand', 'sessionLsp.pythonPath', 'sessionLsp.stores']) {
    assert.equal(props[key].scope, 'machine', key);
  }
});
