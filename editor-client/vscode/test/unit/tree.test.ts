import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { allSessions, branchPointsFromTree, buildSessionTree, childrenOf, sessionsById } from '../../src/lib/tree';
import type { SessionInfo } from '../../src/lib/protocol';

function s(id: string, projectDir: string, modified: string, extra: Partial<SessionInfo> = {}): SessionInfo {
  return { sessionId: id, path: `${projectDir}/${id}.jsonl`, projectDir, cwd: null, title: id, modified, ...extra };
}

const A = '/p/-Users-me-shop';
const B = '/p/-Users-me-other';

test('groups sessions by project, newest first', () => {
  const tree = buildSessionTree([
    s('a1', A, '2026-01-01T00:00:00Z', { cwd: '/Users/me/shop' }),
    s('b1', B, '2026-03-01T00:00:00Z'),
    s('a2', A, '2026-02-01T00:00:00Z', { cwd: '/Users/me/shop' }),
  ]);
  assert.deepEqual(tree.map((p) => p.label), ['/Users/me/other', '/Users/me/shop']);
  assert.deepEqual(tree[1].sessions.map((n) => n.info.sessionId), ['a2', 'a1']);
});

test('forks go under their source, nested, and stay put when the source is missing', () => {
  const tree = buildSessionTree([
    s('src', A, '2026-01-01T00:00:00Z'),
    s('fork1', A, '2026-01-02T00:00:00Z', { forkedFrom: { sessionId: 'src', messageUuid: 'u1' } }),
    s('fork2', A, '2026-01-03T00:00:00Z', { forkedFrom: { sessionId: 'fork1' } }),
    s('orphan', A, '2026-01-04T00:00:00Z', { forkedFrom: { sessionId: 'gone' } }),
  ]);
  assert.equal(tree.length, 1);
  assert.deepEqual(tree[0].sessions.map((n) => n.info.sessionId), ['orphan', 'src']);
  const src = tree[0].sessions[1];
  assert.equal(src.isFork, false);
  assert.deepEqual(src.forks.map((n) => n.info.sessionId), ['fork1']);
  assert.equal(src.forks[0].isFork, true);
  assert.deepEqual(src.forks[0].forks.map((n) => n.info.sessionId), ['fork2']);
  assert.deepEqual(allSessions(tree).map((n) => n.info.sessionId), ['orphan', 'src', 'fork1', 'fork2']);
});

test('fork cycles do not lose sessions', () => {
  const tree = buildSessionTree([
    s('x', A, '2026-01-01T00:00:00Z', { forkedFrom: { sessionId: 'y' } }),
    s('y', A, '2026-01-02T00:00:00Z', { forkedFrom: { sessionId: 'x' } }),
    s('z', A, '2026-01-03T00:00:00Z', { forkedFrom: { sessionId: 'z' } }),
  ]);
  assert.deepEqual(allSessions(tree).map((n) => n.info.sessionId).sort(), ['x', 'y', 'z']);
});

test('duplicates and junk entries are ignored', () => {
  const tree = buildSessionTree([
    s('a', A, '2026-01-01T00:00:00Z'),
    s('a', A, '2026-01-05T00:00:00Z'),
    null as unknown as SessionInfo,
  ]);
  assert.equal(allSessions(tree).length, 1);
});

test('subagents hang under their session', () => {
  const tree = buildSessionTree([
    s('a', A, '2026-01-01T00:00:00Z', {
      subagents: [{ agentId: 'a88b', path: '/p/a/subagents/agent-a88b.jsonl', agentType: 'general-purpose' }],
    }),
  ]);
  const node = tree[0].sessions[0];
  assert.equal(node.subagents.length, 1);
  assert.equal(node.subagents[0].kind, 'subagent');
  assert.equal(node.subagents[0].session.sessionId, 'a');
  assert.deepEqual(childrenOf(node).map((c) => c.kind), ['subagent']);
  assert.deepEqual(childrenOf(tree[0]).map((c) => c.kind), ['session']);
});

test('branch points from a sessions/tree result', () => {
  const info = s('a', A, '2026-01-01T00:00:00Z');
  const bps = branchPointsFromTree(info, {
    sessionId: 'a',
    nodes: [
      { uuid: 'r', parentUuid: null, type: 'user', line: 2, label: 'READ login.ts' },
      { uuid: 'k1', parentUuid: 'r', type: 'assistant', line: 3, label: 'one' },
      { uuid: 'k2', parentUuid: 'r', type: 'assistant', line: 7, label: 'two' },
      { uuid: 'm', parentUuid: 'k1', type: 'user', line: 5, label: 'mid' },
      { uuid: 'm1', parentUuid: 'm', type: 'user', line: 6, label: 'x' },
      { uuid: 'm2', parentUuid: 'm', type: 'user', line: 8, label: 'y' },
    ],
    branchPoints: ['m', 'r'],
  });
  assert.deepEqual(bps.map((b) => [b.uuid, b.line, b.children]), [['r', 2, 2], ['m', 5, 2]]);
  assert.equal(bps[0].label, 'READ login.ts');
  assert.equal(bps[0].session.sessionId, 'a');
});

test("a store's session of a local session's id is not the one commands act on (the tree's is)", () => {
  // sessions/list: the local folder's sessions, then each store's; anyone who can write to the store picks its ids
  const local = s('a', A, '2026-01-01T00:00:00Z', { cwd: '/Users/me/shop' });
  const planted = s('a', '/mirror/-x', '2026-09-01T00:00:00Z', { cwd: '/Users/me/.ssh', storeId: 'team', store: 'team', readOnly: true });
  const list = [local, planted];
  const shown = allSessions(buildSessionTree(list)).map((n) => n.info);
  assert.deepEqual(shown, [local]);
  // what Run Agent Turn, Resume in Terminal and Fork look the id up in (infoFor): the session the tree shows
  assert.equal(sessionsById(list).get('a'), local);
  assert.equal(sessionsById([planted, local]).get('a'), planted); // the first listed, whichever it is
});
