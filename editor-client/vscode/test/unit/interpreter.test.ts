import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { checkPythonModule, chooseLaunch, InterpreterSources } from '../../src/lib/interpreter';

// out/unit/test/unit -> the repository, whose .venv has session-lsp installed (scripts/setup)
const REPO = path.resolve(__dirname, '..', '..', '..', '..', '..', '..');
const OUR_PYTHON = process.env.SESSION_LSP_TEST_PYTHON || path.join(REPO, '.venv', 'bin', 'python');
// the same interpreter's base: it runs, but it has no session-lsp
const BARE_PYTHON = fs.realpathSync(OUR_PYTHON);

/** The Python extension's answer is given; the check is the real one, run on real interpreters. */
function sources(active: string | undefined | Error, asked: string[] = []): InterpreterSources {
  return {
    activeInterpreter: async () => {
      if (active instanceof Error) {
        throw active;
      }
      return active;
    },
    check: (python) => {
      asked.push(python);
      return checkPythonModule(python);
    },
  };
}

test('the real check: our interpreter passes, one without session-lsp and a missing one do not', async () => {
  assert.equal(await checkPythonModule(OUR_PYTHON), undefined);
  assert.match((await checkPythonModule(BARE_PYTHON)) ?? '', /No module named 'server'/);
  assert.ok(await checkPythonModule(path.join(os.tmpdir(), 'no-such-python-here')));
});

test("the Python extension's interpreter is used when it has session-lsp and pythonPath is empty", async () => {
  const asked: string[] = [];
  const choice = await chooseLaunch({ pythonPath: '' }, sources(OUR_PYTHON, asked));
  assert.equal(choice.source, 'pythonExtension');
  const argv = [choice.launch.command, ...choice.launch.args];
  assert.deepEqual(argv, [OUR_PYTHON, '-m', 'server.cli', 'serve', '--stdio']);
  assert.equal(choice.launch.viaPython, true);
  assert.deepEqual(asked, [OUR_PYTHON]);
  assert.deepEqual(choice.notes, []);
});

test("an interpreter without session-lsp falls back to the server command, saying why", async () => {
  const choice = await chooseLaunch({}, sources(BARE_PYTHON));
  assert.equal(choice.source, 'serverCommand');
  assert.deepEqual([choice.launch.command, ...choice.launch.args], ['session-lsp', 'serve', '--stdio']);
  assert.equal(choice.notes.length, 1);
  assert.ok(choice.notes[0].includes(BARE_PYTHON), choice.notes[0]);
  assert.match(choice.notes[0], /was not used: .*No module named 'server'/);
});

test('no Python extension, or one that fails: the server command as before', async () => {
  const none = await chooseLaunch({}, sources(undefined));
  assert.deepEqual([none.source, none.launch.command, none.notes], ['serverCommand', 'session-lsp', []]);
  const broken = await chooseLaunch({}, sources(new Error('activation failed')));
  assert.equal(broken.source, 'serverCommand');
  assert.deepEqual(broken.notes, ['the Python extension gave no interpreter: activation failed']);
});

test('pythonPath and a changed serverCommand win over the Python extension, which is not asked', async () => {
  const asked: string[] = [];
  const py = await chooseLaunch({ pythonPath: '/venv/bin/python' }, sources(OUR_PYTHON, asked));
  assert.deepEqual([py.source, py.launch.command], ['pythonPath', '/venv/bin/python']);
  const custom = { serverCommand: ['/opt/session-lsp', 'serve', '--stdio'] };
  const cmd = await chooseLaunch(custom, sources(OUR_PYTHON, asked));
  assert.deepEqual([cmd.source, cmd.launch.command], ['serverCommand', '/opt/session-lsp']);
  assert.deepEqual(asked, []);
  const spelledOut = { serverCommand: ['session-lsp', 'serve', '--stdio'] };
  const spelledDefault = await chooseLaunch(spelledOut, sources(OUR_PYTHON));
  assert.equal(spelledDefault.source, 'pythonExtension');
});
