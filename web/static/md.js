// A small markdown renderer for reports and findings. Reports quote text from the web, so the whole source is
// HTML-escaped first and only tags built here reach the page; links are limited to http, https and mailto.

const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => ESC[c]);
const unesc = (s) => s.replace(/&(amp|lt|gt|quot|#39);/g, (m, e) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[e]);

// safeUrl takes an escaped URL and returns it ready for an attribute, or '' when the scheme is not allowed.
export function safeUrl(escaped, image) {
  const raw = unesc(escaped).replace(/[\u0000-\u0020\u007f]/g, '');
  const ok = image ? /^https:\/\//i : /^(https?:\/\/|mailto:)/i;
  return ok.test(raw) ? esc(raw) : '';
}

const link = (href, body) => `<a href="${href}" target="_blank" rel="noopener noreferrer">${body}</a>`;
const URL_PART = '((?:[^\\s()]|\\([^\\s()]*\\))+)';
const IMG = new RegExp('!\\[([^\\]]*)\\]\\(\\s*' + URL_PART + '(?:\\s+&quot;.*?&quot;)?\\s*\\)', 'g');
const LINK = new RegExp('\\[((?:[^\\[\\]]|\\[[^\\]]*\\])+)\\]\\(\\s*' + URL_PART + '(?:\\s+&quot;.*?&quot;)?\\s*\\)', 'g');

export function inline(s) {
  const keep = [];
  const put = (h) => `\u0000${keep.push(h) - 1}\u0000`;
  s = s.replace(/(`+)([\s\S]*?[^`])\1(?!`)/g, (_, __, c) => put(`<code>${c.trim()}</code>`));
  s = s.replace(IMG, (m, alt, url) => {
    const u = safeUrl(url, true);
    return u ? put(`<img src="${u}" alt="${alt}" loading="lazy" referrerpolicy="no-referrer">`) : alt;
  });
  s = s.replace(LINK, (m, text, url) => {
    const u = safeUrl(url);
    return u ? put(link(u, emphasis(text))) : text;
  });
  s = s.replace(/&lt;((?:https?:\/\/|mailto:)[^\s&]+(?:&amp;[^\s&]+)*)&gt;/gi, (m, url) => {
    const u = safeUrl(url);
    return u ? put(link(u, url)) : m;
  });
  s = s.replace(/(^|[\s(])(https?:\/\/[^\s<\u0000]+)/g, (m, pre, url) => {
    let tail = '';
    for (let t; (t = /(&quot;|&#39;|&gt;|[.,;:!?)\]*_])$/.exec(url)); ) {
      tail = t[0] + tail;
      url = url.slice(0, -t[0].length);
    }
    const u = safeUrl(url);
    return u ? pre + put(link(u, url)) + tail : m;
  });
  s = emphasis(s).replace(/(?: {2,}|\\)\n/g, '<br>\n');
  for (let i = 0; i < 4 && s.includes('\u0000'); i++) s = s.replace(/\u0000(\d+)\u0000/g, (_, n) => keep[n]);
  return s;
}

function emphasis(s) {
  return s
    .replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, '<strong>$1</strong>')
    .replace(/(^|[^\w])__(?=\S)([\s\S]*?\S)__(?!\w)/g, '$1<strong>$2</strong>')
    .replace(/(^|[^*\w])\*(?=[^\s*])([\s\S]*?[^\s*])\*(?!\*)/g, '$1<em>$2</em>')
    .replace(/(^|[^\w])_(?=[^\s_])([\s\S]*?[^\s_])_(?!\w)/g, '$1<em>$2</em>')
    .replace(/~~(?=\S)([\s\S]*?\S)~~/g, '<del>$1</del>');
}

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$/;
const HR = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}&gt; ?/;
const ITEM = /^( *)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const SEP = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;
const indent = (l) => /^ */.exec(l)[0].length;
const cells = (l) => l.trim().replace(/^\|/, '').replace(/(?<!\\)\|$/, '').split(/(?<!\\)\|/).map((c) => c.trim());
const isTable = (lines, i) => lines[i].includes('|') && i + 1 < lines.length && lines[i + 1].includes('-') &&
  SEP.test(lines[i + 1]) && (lines[i + 1].includes('|') || cells(lines[i]).length > 1);
const startsBlock = (lines, i) => {
  const l = lines[i];
  return FENCE.test(l) || HEADING.test(l) || HR.test(l) || QUOTE.test(l) || ITEM.test(l) || isTable(lines, i);
};

// renderMarkdown turns markdown source into safe HTML.
export function renderMarkdown(src) {
  const text = String(src ?? '').replace(/\r\n?/g, '\n').replace(/\u0000/g, '').replace(/\t/g, '    ');
  return blocks(esc(text).split('\n'));
}

function blocks(lines) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const l = lines[i];
    let m;
    if (!l.trim()) { i++; continue; }
    if ((m = FENCE.exec(l))) {
      const close = new RegExp('^ {0,3}' + m[1][0] + '{' + m[1].length + ',}\\s*$');
      const body = [];
      for (i++; i < lines.length && !close.test(lines[i]); i++) body.push(lines[i]);
      i++;
      out.push(`<pre><code${m[2] ? ` class="lang-${m[2]}"` : ''}>${body.join('\n')}</code></pre>`);
    } else if ((m = HEADING.exec(l))) {
      const n = m[1].length;
      out.push(`<h${n}>${inline(m[2])}</h${n}>`);
      i++;
    } else if (HR.test(l)) {
      out.push('<hr>');
      i++;
    } else if (QUOTE.test(l)) {
      const inner = [];
      for (; i < lines.length && lines[i].trim() && (QUOTE.test(lines[i]) || !startsBlock(lines, i)); i++) inner.push(lines[i].replace(QUOTE, ''));
      out.push(`<blockquote>${blocks(inner)}</blockquote>`);
    } else if (isTable(lines, i)) {
      const align = cells(lines[i + 1]).map((c) => (c.endsWith(':') ? (c.startsWith(':') ? ' class="al-c"' : ' class="al-r"') : ''));
      const row = (l, tag) => '<tr>' + cells(l).map((c, k) => `<${tag}${align[k] || ''}>${inline(c)}</${tag}>`).join('') + '</tr>';
      let html = `<div class="tbl"><table><thead>${row(l, 'th')}</thead><tbody>`;
      for (i += 2; i < lines.length && lines[i].includes('|') && lines[i].trim(); i++) html += row(lines[i], 'td');
      out.push(html + '</tbody></table></div>');
    } else if (ITEM.test(l)) {
      i = list(lines, i, out);
    } else {
      const para = [];
      for (; i < lines.length && lines[i].trim() && (para.length === 0 || !startsBlock(lines, i)); i++) para.push(lines[i].trim());
      out.push(`<p>${inline(para.join('\n'))}</p>`);
    }
  }
  return out.join('\n');
}

function list(lines, i, out) {
  const first = ITEM.exec(lines[i]);
  const base = first[1].length;
  const ordered = /\d/.test(first[2]);
  const items = [];
  let loose = false;
  while (i < lines.length) {
    const l = lines[i];
    const m = ITEM.exec(l);
    if (m && m[1].length <= base + 1) {
      if (/\d/.test(m[2]) !== ordered) break;
      items.push({ lines: [m[3]], pad: m[1].length + m[2].length + 1 });
      i++;
    } else if (!l.trim()) {
      const next = lines[i + 1];
      if (next === undefined || !next.trim() || (indent(next) <= base && !ITEM.test(next))) break;
      loose = loose || (indent(next) <= base + 1);
      items[items.length - 1].lines.push('');
      i++;
    } else if (indent(l) > base) {
      const it = items[items.length - 1];
      it.lines.push(l.slice(Math.min(indent(l), it.pad)));
      i++;
    } else if (!startsBlock(lines, i) && items[items.length - 1].lines.at(-1) !== '') {
      items[items.length - 1].lines.push(l.trim());
      i++;
    } else break;
  }
  const start = ordered ? parseInt(first[2], 10) : 1;
  const tag = ordered ? 'ol' : 'ul';
  const lis = items.map((it) => {
    let html = blocks(it.lines);
    if (!loose) html = html.replace(/^<p>([\s\S]*?)<\/p>/, '$1');
    return `<li>${html}</li>`;
  });
  out.push(`<${tag}${ordered && start !== 1 ? ` start="${start}"` : ''}>${lis.join('')}</${tag}>`);
  return i;
}

const EXPORT_CSS = `body{margin:0;background:#fff;color:#1f2328;font:16px/1.65 system-ui,-apple-system,"Segoe UI",Roboto,"PingFang SC","Microsoft YaHei","Noto Sans CJK SC",sans-serif}
main{max-width:46rem;margin:0 auto;padding:3rem 1.25rem}h1,h2,h3,h4{line-height:1.3;margin:1.6em 0 .6em}h1{font-size:2rem;margin-top:0}
h2{font-size:1.45rem;padding-bottom:.3em;border-bottom:1px solid #e5e7eb}a{color:#3451d1}code{font:.88em ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#f3f4f6;padding:.1em .35em;border-radius:4px}
pre{background:#f6f8fa;padding:1rem;border-radius:8px;overflow:auto}pre code{background:none;padding:0}blockquote{margin:1em 0;padding:.2em 1em;border-left:3px solid #c7cdd4;color:#57606a}
table{border-collapse:collapse;margin:1em 0;width:100%}th,td{border:1px solid #d8dee4;padding:.45em .7em;text-align:left}th{background:#f6f8fa}.al-c{text-align:center}.al-r{text-align:right}img{max-width:100%}hr{border:0;border-top:1px solid #e5e7eb}`;

// standaloneHTML wraps rendered markdown into a self-contained document for download.
export function standaloneHTML(title, markdown, lang) {
  return `<!DOCTYPE html>\n<html lang="${esc(lang || 'en')}">\n<head>\n<meta charset="utf-8">\n<meta name="viewport" content="width=device-width, initial-scale=1">\n` +
    `<title>${esc(title)}</title>\n<style>\n${EXPORT_CSS}\n</style>\n</head>\n<body>\n<main>\n${renderMarkdown(markdown)}\n</main>\n</body>\n</html>\n`;
}
