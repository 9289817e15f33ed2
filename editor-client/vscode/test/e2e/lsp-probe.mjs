// Starts a language server over stdio, sends initialize (and optionally sessions/list), prints JSON.
// Usage: node lsp-probe.mjs [--list] [--projects-dir DIR] [--request METHOD JSON] -- <command> [args...]
// Exit 0 when the server answered initialize within the time limit.
import { spawn } from 'node:child_process';

const argv = process.argv.slice(2);
const sep = argv.indexOf('--');
const opts = argv.slice(0, sep < 0 ? argv.length : sep);
const cmd = sep < 0 ? [] : argv.slice(sep + 1);
const wantList = opts.includes('--list');
const pdIdx = opts.indexOf('--projects-dir');
const projectsDir = pdIdx >= 0 ? opts[pdIdx + 1] : undefined;
const reqIdx = opts.indexOf('--request');
const extraRequest = reqIdx >= 0 ? { method: opts[reqIdx + 1], params: JSON.parse(opts[reqIdx + 2] ?? '{}') } : undefined;
const timeoutMs = Number(process.env.PROBE_TIMEOUT_MS || 20000);
if (cmd.length === 0) {
  console.error('usage: node lsp-probe.mjs [--list] [--projects-dir DIR] -- <command> [args...]');
  process.exit(2);
}

const child = spawn(cmd[0], cmd.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
let stderr = '';
child.stderr.on('data', (d) => (stderr += d));
child.on('error', (e) => fail(`spawn failed: ${e.message}`));
child.on('exit', (code) => fail(`server exited (${code}) before answering; stderr: ${stderr.slice(-2000)}`));

const timer = setTimeout(() => fail(`no answer within ${timeoutMs} ms; stderr: ${stderr.slice(-2000)}`), timeoutMs);

function fail(msg) {
  console.error(`lsp-probe: ${msg}`);
  try {
    child.kill('SIGKILL');
  } catch {}
  process.exit(1);
}

function send(msg) {
  const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', ...msg }), 'utf8');
  child.stdin.write(`Content-Length: ${body.length}\r\n\r\n`);
  child.stdin.write(body);
}

const pending = new Map();
let buf = Buffer.alloc(0);
child.stdout.on('data', (d) => {
  buf = Buffer.concat([buf, d]);
  for (;;) {
    const end = buf.indexOf('\r\n\r\n');
    if (end < 0) return;
    const m = /Content-Length:\s*(\d+)/i.exec(buf.slice(0, end).toString());
    if (!m) return fail('bad header from server');
    const len = Number(m[1]);
    if (buf.length < end + 4 + len) return;
    const msg = JSON.parse(buf.slice(end + 4, end + 4 + len).toString('utf8'));
    buf = buf.slice(end + 4 + len);
    if (msg.id !== undefined && pending.has(msg.id) && (msg.result !== undefined || msg.error !== undefined)) {
      const { resolve } = pending.get(msg.id);
      pending.delete(msg.id);
      resolve(msg);
    } else if (msg.id !== undefined && msg.method) {
      // A request from the server (registerCapability, workDoneProgress/create, ...): answer null.
      send({ id: msg.id, result: null });
    }
  }
});

let nextId = 1;
function request(method, params) {
  const id = nextId++;
  return new Promise((resolve) => {
    pending.set(id, { resolve });
    send({ id, method, params });
  });
}

const init = await request('initialize', {
  processId: process.pid,
  rootUri: null,
  capabilities: { window: { workDoneProgress: true } },
  initializationOptions: { ...(projectsDir ? { projectsDir } : {}), watch: false },
});
if (init.error) fail(`initialize failed: ${JSON.stringify(init.error)}`);
send({ method: 'initialized', params: {} });
const out = { serverInfo: init.result?.serverInfo ?? null };
if (wantList) {
  const list = await request('sessions/list', projectsDir ? { projectsDir } : {});
  if (list.error) fail(`sessions/list failed: ${JSON.stringify(list.error)}`);
  out.sessions = list.result?.sessions ?? [];
}
if (extraRequest) {
  const r = await request(extraRequest.method, extraRequest.params);
  out.request = r.error ? { error: r.error } : r.result;
}
clearTimeout(timer);
child.removeAllListeners('exit');
await request('shutdown', null).catch(() => undefined);
send({ method: 'exit' });
setTimeout(() => child.kill('SIGKILL'), 2000).unref();
console.log(JSON.stringify(out));
process.exit(0);
