// A small, safe Markdown renderer for the conversation panel: every character of the source is
// escaped first; only fences, headings, lists, quotes, rules, emphasis, code spans and http(s)
// links become markup. Images are never loaded (they show as their alt text and address).

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** Inline markup of one escaped-on-the-fly line: code spans first, then links and emphasis. */
export function inline(text: string): string {
  const out: string[] = [];
  const parts = text.split(/(`+)([\s\S]*?)\1/);
  // split with two groups gives [plain, ticks, code, plain, ticks, code, ...]
  for (let i = 0; i < parts.length; i += 3) {
    out.push(spans(parts[i] ?? ''));
    if (i + 2 < parts.length) {
      out.push(`<code>${escapeHtml(parts[i + 2] ?? '')}</code>`);
    }
  }
  return out.join('');
}

function spans(plain: string): string {
  let s = escapeHtml(plain);
  s = s.replace(/!\[([^\]]*)\]\(([^)\s]+)\)/g, (_m, alt: string, url: string) => `[image: ${alt} ${url}]`);
  s = s.replace(/\[([^\]]+)\]\((https?:\/\/[^)\s]+)\)/g, (_m, label: string, url: string) => `<a href="${url}">${label}</a>`);
  s = s.replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>');
  s = s.replace(/(^|[^*\w])\*([^*\s][^*]*)\*(?!\w)/g, '$1<em>$2</em>');
  s = s.replace(/(^|[^_\w])_([^_\s][^_]*)_(?!\w)/g, '$1<em>$2</em>');
  return s;
}

/** Markdown source to HTML (block structure, then inline markup). */
export function markdown(src: string): string {
  const lines = src.replace(/\r\n?/g, '\n').split('\n');
  const html: string[] = [];
  let para: string[] = [];
  let list: { tag: 'ul' | 'ol'; items: string[] } | undefined;
  const flushPara = () => {
    if (para.length) {
      html.push(`<p>${para.map(inline).join('<br>')}</p>`);
      para = [];
    }
  };
  const flushList = () => {
    if (list) {
      html.push(`<${list.tag}>${list.items.map((i) => `<li>${inline(i)}</li>`).join('')}</${list.tag}>`);
      list = undefined;
    }
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = /^(\s*)(`{3,}|~{3,})\s*([\w+-]*)/.exec(line);
    if (fence) {
      flushPara();
      flushList();
      const close = fence[2];
      const body: string[] = [];
      for (i++; i < lines.length && !lines[i].trimStart().startsWith(close); i++) {
        body.push(lines[i]);
      }
      const lang = fence[3] ? ` data-lang="${escapeHtml(fence[3])}"` : '';
      html.push(`<pre class="code"${lang}><code>${escapeHtml(body.join('\n'))}</code></pre>`);
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    const bullet = /^\s*[-*+]\s+(.*)$/.exec(line);
    const numbered = /^\s*\d+[.)]\s+(.*)$/.exec(line);
    if (!line.trim()) {
      flushPara();
      flushList();
    } else if (heading) {
      flushPara();
      flushList();
      const level = Math.min(6, heading[1].length + 2);
      html.push(`<h${level}>${inline(heading[2])}</h${level}>`);
    } else if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flushPara();
      flushList();
      html.push('<hr>');
    } else if (bullet || numbered) {
      flushPara();
      const tag = bullet ? 'ul' : 'ol';
      if (list && list.tag !== tag) {
        flushList();
      }
      list = list ?? { tag, items: [] };
      list.items.push((bullet ?? numbered)![1]);
    } else if (/^\s*>/.test(line)) {
      flushPara();
      flushList();
      html.push(`<blockquote>${inline(line.replace(/^\s*>\s?/, ''))}</blockquote>`);
    } else if (list && /^\s{2,}\S/.test(line)) {
      list.items[list.items.length - 1] += ' ' + line.trim();
    } else {
      flushList();
      para.push(line);
    }
  }
  flushPara();
  flushList();
  return html.join('\n');
}
