import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { markdown } from '../../src/lib/markdown';
import { diffHtml, renderApiForm, renderItems, tokens, toolSummary } from '../../src/lib/conversationHtml';
import type { ConversationItem, DiffHunk } from '../../src/lib/protocol';

const base = { uuid: 'u1', line: 4, segment: 0, hidden: false, time: '2026-11-30T14:49:09.785Z' };

test('markdown escapes everything it does not turn into markup', () => {
  const html = markdown('# Title\n\nHello **bold** and `<b>code</b>` <script>alert(1)</script>\n\n- one\n- two\n\n```ts\nconst a = "<x>";\n```');
  assert.match(html, /<h3>Title<\/h3>/);
  assert.match(html, /<strong>bold<\/strong>/);
  assert.match(html, /<code>&lt;b&gt;code&lt;\/b&gt;<\/code>/);
  assert.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
  assert.doesNotMatch(html, /<script>/);
  assert.match(html, /<ul><li>one<\/li><li>two<\/li><\/ul>/);
  assert.match(html, /<pre class="code" data-lang="ts"><code>const a = &quot;&lt;x&gt;&quot;;<\/code><\/pre>/);
});

test('markdown links only http(s), never loads images', () => {
  const html = markdown('[ok](https://example.com/a) [bad](javascript:alert(1)) ![pic](https://example.com/p.png)');
  assert.match(html, /<a href="https:\/\/example.com\/a">ok<\/a>/);
  assert.doesNotMatch(html, /href="javascript/);
  assert.doesNotMatch(html, /<img/);
});

test('a tool call folds, with its diff and result', () => {
  const item: ConversationItem = {
    ...base,
    id: 'u1',
    kind: 'tool',
    name: 'Edit',
    input: { file_path: '/w/notes.txt', old_string: 'two', new_string: 'TWO' },
    result: { uuid: 'u2', line: 5, isError: false, text: 'The file /w/notes.txt has been updated.' },
    diff: { filePath: '/w/notes.txt', created: false, hunks: [{ oldStart: 1, oldLines: 3, newStart: 1, newLines: 3, lines: [' one', '-two', '+TWO', ' four'] }] },
  };
  const html = renderItems([item], { path: '/x.jsonl' });
  assert.match(html, /<details class="tool" data-id="u1"><summary><span class="status ok">✓<\/span><span class="tool-name">Edit<\/span><span class="tool-arg">\/w\/notes.txt<\/span>/);
  assert.match(html, /<div class="dl del"><span class="ln">2<\/span><span class="ln"><\/span><span class="tx">-two<\/span><\/div>/);
  assert.match(html, /<div class="dl add"><span class="ln"><\/span><span class="ln">2<\/span><span class="tx">\+TWO<\/span><\/div>/);
  assert.match(html, /<div class="dl ctx"><span class="ln">3<\/span><span class="ln">3<\/span><span class="tx"> four<\/span><\/div>/);
  assert.match(html, /data-line="4"/);
  assert.match(html, /Result · line 6/);
});

test('hidden items are marked, branch points list their leaves, images are data URIs', () => {
  const items: ConversationItem[] = [
    { ...base, id: 'a', kind: 'attachment', hidden: true, attachmentType: 'date', text: '<system-reminder>date</system-reminder>' },
    { ...base, id: 'b', kind: 'user', text: 'look', images: [{ mediaType: 'image/png', data: 'iVBOR' }, { mediaType: 'image/svg+xml', data: 'PHN2Zz4=' }] },
    {
      ...base,
      id: 'c',
      kind: 'branch',
      branches: [
        { firstUuid: 'k1', line: 55, leafUuid: 'leaf-1', leafLine: 66, preview: 'THINK', current: false },
        { firstUuid: 'k2', line: 71, leafUuid: 'leaf-2', leafLine: 81, preview: 'Another way', current: true },
      ],
    },
  ];
  const html = renderItems(items, { path: '/x.jsonl' });
  assert.match(html, /<div class="msg hidden-item" data-line="4" data-id="a"><details data-id="a"><summary>attachment · date · line 5<\/summary><pre>&lt;system-reminder&gt;date/);
  assert.match(html, /<img class="img" alt="image" src="data:image\/png;base64,iVBOR">/);
  assert.match(html, /\[image image\/svg\+xml\]/);
  assert.match(html, /<button class="branch-btn" data-leaf="leaf-1"[^>]*>1\. THINK<\/button>/);
  assert.match(html, /<button class="branch-btn current" data-leaf="leaf-2"[^>]*>2\. Another way · shown<\/button>/);
});

test('created files, tokens, summaries of tool inputs and the API form', () => {
  assert.match(diffHtml('/w/hello.txt', [{ oldStart: 0, oldLines: 0, newStart: 1, newLines: 1, lines: ['+hello'] }], true), /Created \/w\/hello.txt/);
  assert.equal(tokens({ input: 12676, output: 14, cacheRead: 0 }), 'in 12,676 · out 14');
  assert.equal(toolSummary('Bash', { command: 'ls   -la\n/tmp' }), 'ls -la /tmp');
  const api = renderApiForm([
    { role: 'user', content: [{ type: 'text', text: 'hi <there>' }] },
    { role: 'system', content: [] },
  ]);
  assert.match(api, /What the model saw on resume: 2 messages/);
  assert.match(api, /2\. system \(empty: the effort carrier\)/);
  assert.match(api, /hi &lt;there&gt;/);
});

test("a hunk's numbers from the transcript are text, never markup (toolUseResult.structuredPatch is anyone's JSON)", () => {
  // the server passed structuredPatch's oldStart/oldLines/newStart/newLines through as recorded: a string there
  // was put into the webview's innerHTML as it was
  const evil = '<a href="https://evil.example/">click</a><details data-subagent="/home/me/.ssh/id_rsa" data-id="x">';
  const hunk = { oldStart: evil, oldLines: '<b>2</b>', newStart: 1, newLines: 1, lines: ['+x'] } as unknown as DiffHunk;
  const html = diffHtml('/w/a.txt', [hunk], false);
  assert.doesNotMatch(html, /<a |<details|<b>/);
  assert.match(html, /<div class="hunk">@@ -&lt;a href=&quot;https:\/\/evil.example\/&quot;&gt;click/);
  // a number that is not one does not break the rows after it
  assert.match(html, /<div class="dl add"><span class="ln"><\/span><span class="ln">1<\/span><span class="tx">\+x<\/span><\/div>/);
});

test('a compaction whose preTokens is not a number still renders (an object with a toLocaleString key threw)', () => {
  const item = { ...base, id: 'k', kind: 'compaction', text: 'Conversation compacted', trigger: 'auto', preTokens: { toLocaleString: 1 } } as unknown as ConversationItem;
  const html = renderItems([item], { path: '/x.jsonl' });
  assert.match(html, /Conversation compacted/);
});
