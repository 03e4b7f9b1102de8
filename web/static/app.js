// The deer-go web UI: composer, settings, thread history and the live run view.
import { readStream } from './sse.js';
import { esc, safeUrl, renderMarkdown, standaloneHTML } from './md.js';
import {
  newThread, apply, addUser, addNote, overlay, fromSnapshot, planOf, lastPlan,
  parseLoose, searchResults, codeOutput, isToolError,
} from './thread.js';
import { ApiError, request, getJSON, setTranslator } from './api.js';
import { pickLang, translator } from './i18n.js';

const $ = (id) => document.getElementById(id);
const enc = encodeURIComponent;
const store = {
  get(k, def) { try { const v = localStorage.getItem('deer-go.' + k); return v == null ? def : JSON.parse(v); } catch { return def; } },
  set(k, v) { try { localStorage.setItem('deer-go.' + k, JSON.stringify(v)); } catch { /* storage off: settings last for this page */ } },
};
const DEFAULTS = { auto: false, bg: true, web: true, think: false, clarify: false, steps: 3, iter: 1, results: 3, rounds: 3, style: 'academic' };
const STYLES = ['academic', 'popular_science', 'news', 'social_media', 'strategic_investment'];
const FIELDS = { 's-auto': 'auto', 's-bg': 'bg', 's-web': 'web', 's-think': 'think', 's-clarify': 'clarify', 's-steps': 'steps', 's-iter': 'iter', 's-results': 'results', 's-rounds': 'rounds', 's-style': 'style' };
const AGENTS = new Set(['coordinator', 'background', 'planner', 'researcher', 'coder', 'analyst', 'reporter']);
const TYPES = new Set(['research', 'analysis', 'processing']);

const app = {
  lang: '', t: null, s: { ...DEFAULTS, ...store.get('settings', {}) },
  th: null, ctrl: null, running: false, loading: false, reconnecting: false, editing: false, userStop: false,
  reasoning: false, threads: [], cursor: '', historyOff: false, nodes: new Map(), open: new Map(), frame: 0, urls: [],
};
const t = (k, v) => app.t(k, v);

const svg = (d) => `<svg viewBox="0 0 24 24" aria-hidden="true">${d}</svg>`;
const ICON = {
  check: svg('<path d="M5 12.5l4.5 4.5L19 7.5"/>'),
  x: svg('<path d="M6 6l12 12M18 6L6 18"/>'),
  alert: svg('<path d="M12 3.5l9 16H3z"/><path d="M12 10v4M12 17v.5"/>'),
  search: svg('<circle cx="11" cy="11" r="6"/><path d="M15.5 15.5L20 20"/>'),
  page: svg('<path d="M6 3h8l4 4v14H6z"/><path d="M14 3v4h4M9 12h6M9 16h5"/>'),
  code: svg('<path d="M8.5 7l-5 5 5 5M15.5 7l5 5-5 5"/>'),
  plan: svg('<path d="M9 6h11M9 12h11M9 18h11M4 6h.5M4 12h.5M4 18h.5"/>'),
  doc: svg('<path d="M6 3h8l4 4v14H6z"/><path d="M14 3v4h4M9 12h6M9 16h6"/>'),
  copy: svg('<rect x="8" y="8" width="12" height="12" rx="2"/><path d="M16 8V5H4v11h4"/>'),
  download: svg('<path d="M12 4v11M7 10l5 5 5-5M5 20h14"/>'),
  edit: svg('<path d="M4 20h4L19 9l-4-4L4 16z"/>'),
  play: svg('<path class="f" d="M8 5.5l10 6.5-10 6.5z"/>'),
  trash: svg('<path d="M4 7h16M10 11v6M14 11v6M6 7l1 13h10l1-13M9 7V4h6v3"/>'),
  stop: svg('<rect class="f" x="7" y="7" width="10" height="10" rx="1.5"/>'),
  tool: svg('<path d="M14.5 5.5a4 4 0 0 0 4.5 5L10 19.5a2.1 2.1 0 0 1-3-3l9-9"/>'),
  note: svg('<path d="M5 5h14v10l-4 4H5z"/><path d="M9 10h6M9 13h4"/>'),
};

// ---------- rendering ----------

function schedule() {
  if (!app.frame) app.frame = requestAnimationFrame(flush);
}

function flush() {
  app.frame = 0;
  const th = app.th;
  const sc = $('scroller');
  // Follow a live run at the bottom, unless the reader scrolled up; a thread being loaded is placed afterwards.
  const pinned = !app.loading && sc.scrollHeight - sc.scrollTop - sc.clientHeight < 120;
  if (th) {
    const tl = $('timeline');
    for (const b of th.blocks) {
      let el = app.nodes.get(b);
      if (!el) {
        el = document.createElement('div');
        el.className = 'blk';
        el.blk = b;
        app.nodes.set(b, el);
        tl.append(el);
        th.dirty.add(b);
      }
      if (th.dirty.has(b)) el.innerHTML = renderBlock(th, b);
    }
    th.dirty.clear();
  }
  $('welcome').hidden = !!(th && th.blocks.length);
  renderChrome();
  if (pinned) sc.scrollTop = sc.scrollHeight;
}

function renderAll() {
  if (app.th) for (const b of app.th.blocks) app.th.dirty.add(b);
  schedule();
}

function isOpen(k, def) {
  return app.open.has(k) ? app.open.get(k) : def;
}

function renderBlock(th, b) {
  switch (b.type) {
    case 'user':
      if (b.kind === 'accept') return `<div class="marker ok">${ICON.check}<span>${esc(t('accepted'))}</span></div>`;
      if (b.kind === 'edit' && !b.text) return `<div class="marker edit">${ICON.edit}<span>${esc(t('edit_marker'))}</span></div>`;
      return `<div class="turn user"><div class="bubble">${b.kind === 'edit' ? `<span class="tag">${esc(t('edit_label'))}</span>` : ''}${esc(b.text)}</div></div>`;
    case 'bubble': return bubbleHTML(b.msg);
    case 'plan': return planHTML(th, b);
    case 'report': return reportHTML(th, b);
    case 'acts': return `<div class="card">${actsHTML(b.acts)}</div>`;
    case 'note':
      if (b.tone === 'cancelled') return `<div class="marker">${ICON.stop}<span>${esc(t('cancelled'))}</span></div>`;
      return `<div class="marker bad" role="note">${ICON.alert}<span>${esc(t('run_failed', { msg: b.text }))}</span></div>`;
  }
  return '';
}

function thinkingHTML(m) {
  if (!m || !m.reasoning) return '';
  const k = 'think-' + m.id;
  const live = !m.finish && !m.content;
  return `<details class="think" data-k="${esc(k)}"${isOpen(k, live) ? ' open' : ''}><summary>${esc(t('thinking'))}${live ? '<span class="spin"></span>' : ''}</summary><div class="think-body">${esc(m.reasoning)}</div></details>`;
}

function bubbleHTML(m) {
  if (!m.content.trim() && !m.reasoning) return '';
  return `<div class="turn bot"><img class="avatar" src="/static/favicon.svg" alt="deer-go" width="28" height="28"><div class="bubble md">${thinkingHTML(m)}${renderMarkdown(m.content)}</div></div>`;
}

const pill = (tone, text) => `<span class="pill ${tone}">${tone === 'run' ? '<span class="spin"></span>' : ''}${esc(text)}</span>`;

function planHTML(th, b) {
  const p = planOf(b) || {};
  const m = b.msg;
  const steps = Array.isArray(p.steps) ? p.steps : [];
  const title = esc(p.title || t('plan_title'));
  if (b.superseded) {
    return `<details class="card plan old" data-k="plan-${b.key}"${isOpen('plan-' + b.key, false) ? ' open' : ''}><summary><span class="kicker">${ICON.plan}${esc(t('plan'))}</span><span class="old-title">${title}</span>${pill('muted', t('superseded'))}</summary>` +
      `<ol class="steps">${steps.map((s, i) => stepHTML(b, s, i)).join('')}</ol></details>`;
  }
  const streaming = m && !m.finish;
  const n = b.steps.length;
  const finished = b.steps.filter((s) => s.status !== 'pending' && s.status !== 'running').length;
  const cur = b.steps.findIndex((s) => s.status === 'running');
  let state = '';
  if (b.review) state = pill('warn', t('waiting'));
  else if (streaming) state = pill('run', t('drafting'));
  else if (cur >= 0) state = pill('run', t('researching', { n: cur + 1, total: n }));
  else if (n && finished === n) state = pill('ok', t('finished'));
  let html = `<article class="card plan" aria-label="${esc(t('plan'))}"><header class="card-h"><span class="kicker">${ICON.plan}${esc(t('plan'))}</span>${state}</header>` +
    `<h3 class="plan-title">${title}</h3>`;
  if (p.thought) html += `<p class="thought">${esc(p.thought)}</p>`;
  html += thinkingHTML(m);
  if (steps.length) html += `<ol class="steps">${steps.map((s, i) => stepHTML(b, s, i)).join('')}</ol>`;
  else if (streaming) html += '<div class="skeleton"><i></i><i></i><i></i></div>';
  if (b.extra.length) {
    const k = 'extra-' + b.key;
    html += `<details class="activity" data-k="${k}"${isOpen(k, false) ? ' open' : ''}><summary>${esc(t('other_activity'))}</summary>${actsHTML(b.extra)}</details>`;
  }
  if (b.review) html += reviewHTML(b.review);
  return html + '</article>';
}

function stepHTML(b, s, i) {
  const v = b.steps[i] || { status: 'pending', error: '', acts: [] };
  const st = b.superseded ? 'pending' : v.status;
  const type = TYPES.has(s.step_type) ? s.step_type : '';
  const k = `st-${b.key}-${i}`;
  const label = esc(t('status_' + st));
  let html = `<li class="step ${st}"><span class="dot" role="img" aria-label="${label}" title="${label}">${st === 'done' ? ICON.check : st === 'failed' ? ICON.x : st === 'stopped' ? ICON.stop : ''}</span><div class="step-body">` +
    `<div class="step-h"><span class="step-title">${esc(s.title || '')}</span>${type ? `<span class="badge t-${type}">${esc(t('type_' + type))}</span>` : ''}</div>`;
  if (s.description) html += `<p class="step-desc">${esc(s.description)}</p>`;
  if (v.error) html += `<p class="step-err">${esc(v.error)}</p>`;
  if (v.acts.length) {
    html += `<details class="activity" data-k="${k}"${isOpen(k, st === 'running') ? ' open' : ''}><summary>${activitySummary(v.acts)}</summary>${actsHTML(v.acts)}</details>`;
  }
  return html + '</div></li>';
}

function activitySummary(acts) {
  let searches = 0, pages = 0, code = 0;
  for (const m of acts) for (const c of m.calls) {
    if (c.name === 'web_search') searches++;
    else if (c.name === 'crawl_tool') pages++;
    else code++;
  }
  const parts = [t('activity')];
  if (searches) parts.push(searches === 1 ? t('n_search') : t('n_searches', { n: searches }));
  if (pages) parts.push(pages === 1 ? t('n_page') : t('n_pages', { n: pages }));
  if (code) parts.push(t('n_code'));
  return esc(parts.join(' · '));
}

function actsHTML(acts) {
  return '<div class="acts">' + acts.map((m) => {
    let h = '';
    if (m.content.trim()) h += `<div class="act-text md${m.calls.length ? ' aside' : ''}">${renderMarkdown(m.content)}</div>`;
    for (const c of m.calls) h += callHTML(c);
    return h;
  }).join('') + '</div>';
}

const clip = (s, n = 1200) => (s.length > n ? s.slice(0, n) + '…' : s);
const domain = (u) => { try { return new URL(u).hostname.replace(/^www\./, ''); } catch { return ''; } };
function extLink(url, text) {
  const href = safeUrl(esc(String(url || '')));
  return href ? `<a href="${href}" target="_blank" rel="noopener noreferrer">${esc(text)}</a>` : esc(text);
}
const waiting = '<span class="spin"></span>';

function callHTML(c) {
  const a = c.args || parseLoose(c.argsText) || {};
  const r = c.result;
  if (r != null && isToolError(r)) {
    return `<div class="act bad">${ICON.alert}<div class="act-b"><span class="act-h">${esc(t('tool_failed', { tool: c.name }))}</span><pre class="out">${esc(clip(r, 600))}</pre></div></div>`;
  }
  if (c.name === 'web_search') {
    const rs = r == null ? null : searchResults(r);
    let body = waiting;
    if (rs && rs.length) body = '<ul class="links">' + rs.slice(0, 8).map((x) => `<li>${extLink(x.url, x.title || x.url)}<span class="dom">${esc(domain(x.url))}</span></li>`).join('') + '</ul>';
    else if (rs) body = `<span class="muted">${esc(t('no_results'))}</span>`;
    else if (r != null) body = `<pre class="out">${esc(clip(r, 600))}</pre>`;
    return `<div class="act">${ICON.search}<div class="act-b"><span class="act-h">${esc(t('searched'))}${a.query ? ` <q>${esc(a.query)}</q>` : ''}</span>${body}</div></div>`;
  }
  if (c.name === 'crawl_tool') {
    const j = r ? parseLoose(r) : null;
    const title = (j && j.title) || a.url || '';
    return `<div class="act">${ICON.page}<div class="act-b"><span class="act-h">${esc(t('read'))} ${extLink(a.url, title)}</span>${r == null ? waiting : a.url && title !== a.url ? `<span class="dom">${esc(domain(a.url))}</span>` : ''}</div></div>`;
  }
  if (c.name === 'python_repl_tool') {
    const o = r == null ? null : codeOutput(r);
    let out = waiting;
    if (o && o.error != null) out = `<pre class="out err">${esc(clip(o.error))}</pre>`;
    else if (o) out = `<div class="out-h">${esc(t('output'))}</div><pre class="out">${esc(clip(o.out.trimEnd()))}</pre>`;
    return `<div class="act">${ICON.code}<div class="act-b"><span class="act-h">${esc(t('ran'))}</span><pre class="code"><code>${esc(a.code || '')}</code></pre>${out}</div></div>`;
  }
  const args = Object.keys(a).length ? `<pre class="out">${esc(clip(JSON.stringify(a, null, 2), 600))}</pre>` : '';
  return `<div class="act">${ICON.tool}<div class="act-b"><span class="act-h">${esc(c.name)}</span>${args}${r == null ? waiting : `<pre class="out">${esc(clip(r, 600))}</pre>`}</div></div>`;
}

function reviewHTML(rv) {
  const opts = rv.options.length ? rv.options : [{ value: 'edit_plan' }, { value: 'accepted' }];
  const btn = (o) => {
    if (o.value === 'accepted') return `<button class="btn primary" type="button" data-act="accept">${ICON.play}<span>${esc(t('accept'))}</span></button>`;
    if (o.value === 'edit_plan') return `<button class="btn" type="button" data-act="edit">${ICON.edit}<span>${esc(t('edit_plan'))}</span></button>`;
    return `<button class="btn" type="button" data-act="opt" data-v="${esc(o.value)}">${esc(o.text || o.value)}</button>`;
  };
  const sorted = [...opts].sort((x, y) => (x.value === 'accepted') - (y.value === 'accepted'));
  return `<div class="review"><p>${esc(t('review_hint'))}</p><div class="actions">${sorted.map(btn).join('')}</div></div>`;
}

function fileName(th) {
  return (th.title || 'report').replace(/[^\p{L}\p{N}]+/gu, '-').replace(/^-+|-+$/g, '').slice(0, 60) || 'report';
}

function reportHTML(th, b) {
  const m = b.msg;
  const streaming = !m.finish;
  let tools = pill('run', t('writing'));
  if (!streaming) {
    if (!b.urls) {
      const title = th.title || (m.content.match(/^#\s+(.+)$/m) || [])[1] || 'report';
      b.urls = {
        md: URL.createObjectURL(new Blob([m.content], { type: 'text/markdown;charset=utf-8' })),
        html: URL.createObjectURL(new Blob([standaloneHTML(title, m.content, app.lang)], { type: 'text/html;charset=utf-8' })),
      };
      app.urls.push(b.urls.md, b.urls.html);
    }
    const f = esc(fileName(th));
    tools = `<div class="tools"><button class="btn ghost small" type="button" data-act="copy">${ICON.copy}<span>${esc(t('copy'))}</span></button>` +
      `<a class="btn ghost small" data-dl="md" href="${b.urls.md}" download="${f}.md" title="${esc(t('dl_md_title'))}">${ICON.download}<span>${esc(t('dl_md'))}</span></a>` +
      `<a class="btn ghost small" data-dl="html" href="${b.urls.html}" download="${f}.html" title="${esc(t('dl_html_title'))}">${ICON.download}<span>${esc(t('dl_html'))}</span></a></div>`;
  }
  let cites = '';
  if (!streaming && th.citations.length) {
    const k = 'src-' + b.key;
    cites = `<details class="sources" data-k="${k}"${isOpen(k, false) ? ' open' : ''}><summary>${esc(t('sources', { n: th.citations.length }))}</summary><ol>` +
      th.citations.map((c) => `<li>${extLink(c.url, c.title || c.url)}<span class="dom">${esc(c.domain || domain(c.url))}</span></li>`).join('') + '</ol></details>';
  }
  return `<article class="card report${streaming ? ' streaming' : ''}" aria-label="${esc(t('report'))}"><header class="card-h"><span class="kicker">${ICON.doc}${esc(t('report'))}</span>${tools}</header>` +
    `${thinkingHTML(m)}<div class="md report-body">${renderMarkdown(m.content)}</div>${cites}</article>`;
}

function pendingReview() {
  const pb = app.th && lastPlan(app.th);
  return !!(pb && pb.review && !app.running);
}

function renderChrome() {
  const th = app.th;
  let status = '';
  if (app.reconnecting) status = t('st_reconnect');
  else if (app.running) status = th && AGENTS.has(th.agent) ? t('st_' + th.agent) : t('st_starting');
  else if (app.loading) status = t('st_loading');
  const st = $('status');
  const html = status ? `<span class="spin"></span><span>${esc(status)}</span>` : '';
  if (st.innerHTML !== html) st.innerHTML = html;
  $('send').hidden = app.running;
  $('cancel').hidden = !app.running;
  const editing = app.editing || pendingReview();
  $('mode').hidden = !app.editing;
  $('prompt').placeholder = t(editing ? 'prompt_ph_edit' : th && th.blocks.length ? 'prompt_ph_more' : 'prompt_ph');
  const title = (th && th.title) || t('new');
  $('title').textContent = title;
  document.title = th && th.title ? `${th.title} · deer-go` : 'deer-go';
}

function renderChips() {
  const s = app.s;
  const parts = [t('style_' + s.style), s.auto ? t('chip_auto') : t('chip_review')];
  if (app.reasoning && s.think) parts.push(t('chip_think'));
  $('chips').textContent = parts.join(' · ');
}

function renderStatic() {
  document.documentElement.lang = app.lang;
  for (const el of document.querySelectorAll('[data-i18n]')) el.textContent = t(el.dataset.i18n);
  for (const el of document.querySelectorAll('[data-i18n-aria]')) el.setAttribute('aria-label', t(el.dataset.i18nAria));
  const sel = $('s-style');
  sel.innerHTML = STYLES.map((v) => `<option value="${v}">${esc(t('style_' + v))}</option>`).join('');
  sel.value = app.s.style;
  renderChips();
  renderList();
}

const REL = [[60, 'second'], [3600, 'minute'], [86400, 'hour'], [604800, 'day']];
function ago(iso) {
  const d = new Date(iso);
  if (isNaN(d)) return '';
  const s = (Date.now() - d) / 1000;
  if (s < 45) return new Intl.RelativeTimeFormat(app.lang, { numeric: 'auto' }).format(0, 'second');
  for (let i = 1; i < REL.length; i++) {
    if (s < REL[i][0]) return new Intl.RelativeTimeFormat(app.lang, { numeric: 'auto', style: 'short' }).format(-Math.round(s / REL[i - 1][0]), REL[i][1]);
  }
  return d.toLocaleDateString(app.lang, { month: 'short', day: 'numeric' });
}

function renderList() {
  const nav = $('threads');
  const cur = app.th && app.th.id;
  if (app.historyOff) { nav.innerHTML = `<p class="side-empty">${esc(t('history_off'))}</p>`; return; }
  if (!app.threads.length) { nav.innerHTML = `<p class="side-empty">${esc(t('history_empty'))}</p>`; return; }
  nav.innerHTML = app.threads.map((x) => {
    const title = esc(x.title || t('untitled'));
    const st = esc(x.status || '');
    return `<div class="th-item${x.id === cur ? ' active' : ''}"><a class="th-link" href="?thread=${enc(x.id)}" data-open="${esc(x.id)}"${x.id === cur ? ' aria-current="page"' : ''}>` +
      `<span class="th-dot s-${st}" title="${st.replace(/_/g, ' ')}"></span><span class="th-title">${title}</span><time datetime="${esc(x.updated_at || '')}">${esc(ago(x.updated_at))}</time></a>` +
      `<button class="icon-btn small th-del" type="button" data-del="${esc(x.id)}" aria-label="${esc(t('delete'))}: ${title}">${ICON.trash}</button></div>`;
  }).join('') + (app.cursor ? `<button class="btn ghost small more" type="button" data-more="1">${esc(t('more'))}</button>` : '');
}

// ---------- notices ----------

function notice(msg, tone = 'error') {
  const el = document.createElement('div');
  el.className = 'notice ' + tone;
  el.setAttribute('role', tone === 'error' ? 'alert' : 'status');
  el.innerHTML = `${ICON.alert}<span class="msg">${esc(msg)}</span><button class="icon-btn small" type="button" aria-label="${esc(t('dismiss'))}">${ICON.x}</button>`;
  el.querySelector('button').addEventListener('click', () => el.remove());
  const box = $('notices');
  box.append(el);
  while (box.children.length > 3) box.firstElementChild.remove();
}

// ---------- threads and runs ----------

function uid() {
  if (crypto.randomUUID) return crypto.randomUUID();
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
}

function setURL(id, push = true) {
  const url = id ? `?thread=${enc(id)}` : location.pathname;
  if (location.search !== (id ? url : '')) history[push ? 'pushState' : 'replaceState'](null, '', url);
}

function setThread(th) {
  if (app.ctrl) app.ctrl.abort();
  for (const u of app.urls) URL.revokeObjectURL(u);
  app.urls = [];
  app.th = th;
  app.nodes = new Map();
  app.open = new Map();
  app.editing = false;
  $('timeline').replaceChildren();
  renderList();
  schedule();
}

function newResearch() {
  setThread(null);
  setURL('');
  $('prompt').focus();
}

function requestSettings() {
  const s = app.s;
  return {
    auto_accepted_plan: s.auto, max_plan_iterations: s.iter, max_step_num: s.steps, max_search_results: s.results,
    enable_background_investigation: s.bg, enable_web_search: s.web, enable_deep_thinking: app.reasoning && s.think,
    enable_clarification: s.clarify, max_clarification_rounds: s.rounds, report_style: s.style,
  };
}

async function send(text, feedback) {
  if (app.running || app.loading) return;
  closeSettings();
  $('notices').replaceChildren();
  let th = app.th;
  const fresh = !th;
  if (fresh) {
    th = newThread(uid());
    th.title = text.slice(0, 80);
    setThread(th);
    setURL(th.id);
  }
  const turn = addUser(th, feedback === 'accepted' ? '' : text, feedback === 'accepted' ? 'accept' : feedback ? 'edit' : 'msg');
  app.editing = false;
  const body = { ...requestSettings(), messages: [{ role: 'user', content: text }], thread_id: th.id, locale: app.lang };
  if (feedback) body.interrupt_feedback = feedback;
  const res = await run(th, (signal) => request('POST', '/api/chat/stream', { body, signal, headers: { 'Cache-Control': 'no-cache' } }), { live: 0, reattach: true });
  if (res.err && !res.gotEvents && app.th === th) {
    // Nothing ran: take the turn back so the user can fix the problem and send it again.
    th.blocks.splice(th.blocks.indexOf(turn), 1);
    app.nodes.get(turn)?.remove();
    if (feedback !== 'accepted' && !$('prompt').value.trim()) { $('prompt').value = text; autosize(); }
    if (fresh) { setThread(null); setURL('', false); }
  }
  if (res.err) notice(res.err.message);
  if (res.gotEvents) await refreshThread(th);
  refreshList();
}

// run reads one stream into th; open() makes the request. With reattach, a stream that ends before its run does is
// picked up again from the last event id.
async function run(th, open, { live, reattach, quiet }) {
  const ctrl = new AbortController();
  app.ctrl = ctrl;
  app.userStop = false;
  if (!quiet) app.running = true;
  schedule();
  let gotEvents = false, ended = false, err = null;
  const onEvent = (ev) => {
    gotEvents = true;
    app.reconnecting = false;
    let d;
    try { d = JSON.parse(ev.data); } catch { return; }
    if (th.replay) th.replay(ev.event, d);
    ended = apply(th, ev.event, d, ev.id);
    if (ev.event === 'error' && d.reason !== 'cancelled' && +(ev.id || Infinity) > live) notice(t('run_failed', { msg: d.error || '' }));
    schedule();
  };
  try {
    let resp = await open(ctrl.signal);
    if (!quiet) refreshList();
    for (let attempt = 0; ; attempt++) {
      try {
        await readStream(resp.body, onEvent);
      } catch (e) {
        if (ctrl.signal.aborted) throw e;
      }
      if (ended || !reattach) break;
      if (attempt >= 5) throw new ApiError(t('err_lost'), 0);
      app.reconnecting = true;
      schedule();
      await new Promise((ok) => setTimeout(ok, 400 * 2 ** attempt));
      if (ctrl.signal.aborted) throw new DOMException('aborted', 'AbortError');
      try {
        resp = await request('GET', `/api/threads/${enc(th.id)}/stream?after=${th.lastId}`, { signal: ctrl.signal });
      } catch (e) {
        if (e.status === 0) continue;
        if (e.status === 404 || e.status === 405) throw new ApiError(t('err_lost'), 0);
        throw e;
      }
    }
  } catch (e) {
    if (e.name !== 'AbortError') err = e;
    else if (app.userStop && app.th === th) { addNote(th, '', 'cancelled'); }
  } finally {
    if (app.ctrl === ctrl) {
      app.ctrl = null;
      app.running = false;
      app.reconnecting = false;
    }
    schedule();
  }
  return { err, gotEvents };
}

async function refreshThread(th) {
  try {
    const snap = await getJSON(`/api/threads/${enc(th.id)}`);
    if (app.th !== th) return;
    overlay(th, snap);
    schedule();
  } catch (e) {
    if (e.status !== 404 && e.status !== 405) console.warn('refresh thread', e);
  }
}

async function openThread(id, push = true) {
  const th = newThread(id);
  setThread(th);
  if (push) setURL(id);
  app.loading = true;
  schedule();
  let snap;
  try {
    snap = await getJSON(`/api/threads/${enc(id)}`);
  } catch (e) {
    app.loading = false;
    if (app.th !== th) return;
    notice(t('err_open', { msg: e.detail || e.message }));
    newResearch();
    return;
  }
  if (app.th !== th) return;
  th.title = snap.title || '';
  // Replay the thread's event log; user turns are not in it, so they are put back at run boundaries.
  const users = (snap.messages || []).filter((m) => m.role === 'user');
  th.replay = (name, d) => {
    const starts = th.runEnded && (name === 'error' || (d.id && d.agent && !th.msgs.has(d.id) && ['message_chunk', 'tool_calls', 'tool_call_chunks'].includes(name)));
    if (!starts) return;
    if (th.interrupt && d.agent && d.agent !== 'planner' && d.agent !== 'coordinator') addUser(th, '', 'accept');
    else if (th.interrupt && d.agent === 'planner') {
      // A plan edit: servers that leave feedback out of the thread's messages still get a marker.
      addUser(th, users[0] && users[0].kind === 'feedback' ? users.shift().content : '', 'edit');
    } else if (users.length) { const u = users.shift(); addUser(th, u.content, u.kind === 'feedback' ? 'edit' : 'msg'); }
  };
  const running = snap.status === 'running';
  // A live run is followed at the bottom as it streams; a finished thread is placed once it is loaded.
  if (running) app.loading = false;
  const res = await run(th, (signal) => request('GET', `/api/threads/${enc(id)}/stream?after=0`, { signal }), { live: snap.last_event_id || 0, reattach: running, quiet: !running });
  th.replay = null;
  app.loading = false;
  if (app.th !== th) return;
  if (res.err && !res.gotEvents && (res.err.status === 404 || res.err.status === 405)) {
    fromSnapshot(th, snap);
  } else {
    for (const u of users) addUser(th, u.content, u.kind === 'feedback' ? 'edit' : 'msg');
    if (res.err) notice(res.err.message);
    overlay(th, snap);
    if (running) await refreshThread(th);
  }
  if (app.frame) { cancelAnimationFrame(app.frame); app.frame = 0; }
  flush();
  const sc = $('scroller');
  const rep = !running && [...document.querySelectorAll('#timeline .report')].pop();
  sc.scrollTop = rep ? rep.getBoundingClientRect().top - sc.getBoundingClientRect().top + sc.scrollTop - 12 : sc.scrollHeight;
  if (running) refreshList();
}

async function refreshList(more) {
  try {
    const r = await getJSON(`/api/threads?limit=30${more ? '&cursor=' + enc(app.cursor) : ''}`);
    const list = Array.isArray(r.threads) ? r.threads : [];
    app.threads = more ? app.threads.concat(list) : list;
    app.cursor = r.next_cursor || '';
    app.historyOff = false;
  } catch (e) {
    if (e.status === 404 || e.status === 405) app.historyOff = true;
    else if (more) notice(e.message);
  }
  renderList();
}

async function deleteThread(id) {
  const x = app.threads.find((y) => y.id === id);
  if (!confirm(t('delete_confirm', { title: (x && x.title) || t('untitled') }))) return;
  try {
    await request('DELETE', `/api/threads/${enc(id)}`);
  } catch (e) {
    notice(t('err_delete', { msg: e.detail || e.message }));
    return;
  }
  if (app.th && app.th.id === id) newResearch();
  app.threads = app.threads.filter((y) => y.id !== id);
  renderList();
  refreshList();
}

async function stop() {
  const th = app.th;
  if (!th || !app.running) return;
  try {
    await request('POST', `/api/threads/${enc(th.id)}/cancel`);
  } catch (e) {
    // No cancel endpoint, or the run already ended: dropping the stream stops the run on servers that tie runs to it.
    if (e.status !== 404 && e.status !== 405 && e.status !== 409) { notice(t('err_cancel', { msg: e.detail || e.message })); return; }
    app.userStop = true;
    if (app.ctrl) app.ctrl.abort();
  }
}

async function copyReport(btn, text) {
  let ok = false;
  try {
    await navigator.clipboard.writeText(text);
    ok = true;
  } catch {
    const ta = document.createElement('textarea');
    ta.value = text;
    document.body.append(ta);
    ta.select();
    ok = document.execCommand('copy');
    ta.remove();
  }
  if (!ok) { notice(t('err_copy')); return; }
  const span = btn.querySelector('span');
  span.textContent = t('copied');
  setTimeout(() => { span.textContent = t('copy'); }, 1500);
}

// ---------- composer, settings, drawer ----------

function autosize() {
  const el = $('prompt');
  el.style.height = 'auto';
  el.style.height = Math.min(el.scrollHeight, 220) + 'px';
}

function submit() {
  const el = $('prompt');
  const text = el.value.trim();
  if (!text || app.running || app.loading) return;
  const feedback = app.editing || pendingReview() ? 'edit_plan' : '';
  el.value = '';
  autosize();
  send(text, feedback);
}

function setEditing(on) {
  app.editing = on;
  schedule();
  if (on) $('prompt').focus();
}

function openSettings(on) {
  $('settings').hidden = !on;
  $('settings-btn').setAttribute('aria-expanded', String(on));
  if (on) $('s-auto').focus();
}
function closeSettings() {
  if (!$('settings').hidden) openSettings(false);
}

function bindSettings() {
  for (const [id, key] of Object.entries(FIELDS)) {
    const el = $(id);
    if (el.type === 'checkbox') el.checked = !!app.s[key];
    else el.value = app.s[key];
    el.addEventListener(el.tagName === 'SELECT' || el.type === 'checkbox' ? 'change' : 'input', () => {
      app.s[key] = el.type === 'checkbox' ? el.checked : el.type === 'number' ? (el.value === '' ? DEFAULTS[key] : Number(el.value)) : el.value;
      store.set('settings', app.s);
      $('rounds-row').hidden = !app.s.clarify;
      renderChips();
    });
  }
  $('rounds-row').hidden = !app.s.clarify;
}

function drawer(on) {
  document.body.classList.toggle('drawer', on);
  $('scrim').hidden = !on;
  $('open-drawer').setAttribute('aria-expanded', String(on));
  if (on) $('new-thread').focus();
}

function applyTheme(theme) {
  if (theme) document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
}

function setLang(lang) {
  app.lang = lang;
  app.t = translator(lang);
  setTranslator(app.t);
  renderStatic();
  renderAll();
}

function bind() {
  const prompt = $('prompt');
  prompt.addEventListener('input', autosize);
  prompt.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && e.keyCode !== 229) { e.preventDefault(); submit(); }
  });
  $('composer').addEventListener('submit', (e) => { e.preventDefault(); submit(); });
  $('cancel').addEventListener('click', stop);
  $('cancel-edit').addEventListener('click', () => setEditing(false));
  $('settings-btn').addEventListener('click', () => openSettings($('settings').hidden));
  $('settings-close').addEventListener('click', () => { openSettings(false); $('settings-btn').focus(); });
  $('new-thread').addEventListener('click', () => { newResearch(); drawer(false); });
  $('open-drawer').addEventListener('click', () => drawer(true));
  $('close-drawer').addEventListener('click', () => { drawer(false); $('open-drawer').focus(); });
  $('scrim').addEventListener('click', () => drawer(false));
  $('lang').addEventListener('click', () => { const l = app.lang === 'zh-CN' ? 'en-US' : 'zh-CN'; store.set('lang', l); setLang(l); });
  $('theme').addEventListener('click', () => {
    const cur = document.documentElement.dataset.theme;
    const dark = cur ? cur === 'dark' : matchMedia('(prefers-color-scheme: dark)').matches;
    const next = dark ? 'light' : 'dark';
    store.set('theme', next);
    applyTheme(next);
  });
  for (const b of document.querySelectorAll('.example')) {
    b.addEventListener('click', () => { prompt.value = b.textContent; autosize(); prompt.focus(); });
  }
  $('threads').addEventListener('click', (e) => {
    const del = e.target.closest('[data-del]');
    if (del) { deleteThread(del.dataset.del); return; }
    if (e.target.closest('[data-more]')) { refreshList(true); return; }
    const a = e.target.closest('[data-open]');
    if (a && !e.ctrlKey && !e.metaKey && !e.shiftKey) {
      e.preventDefault();
      drawer(false);
      if (!app.th || app.th.id !== a.dataset.open) openThread(a.dataset.open);
    }
  });
  const tl = $('timeline');
  tl.addEventListener('click', (e) => {
    const sum = e.target.closest('summary');
    if (sum && sum.parentElement.dataset.k) app.open.set(sum.parentElement.dataset.k, !sum.parentElement.open);
    const btn = e.target.closest('[data-act]');
    if (!btn) return;
    const b = btn.closest('.blk')?.blk;
    switch (btn.dataset.act) {
      case 'accept': send(t('accept_msg'), 'accepted'); break;
      case 'edit': setEditing(true); break;
      case 'opt': send(btn.dataset.v, btn.dataset.v); break;
      case 'copy': if (b && b.msg) copyReport(btn, b.msg.content); break;
    }
  });
  document.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape') return;
    if (!$('settings').hidden) { openSettings(false); $('settings-btn').focus(); }
    else if (document.body.classList.contains('drawer')) { drawer(false); $('open-drawer').focus(); }
    else if (app.editing) setEditing(false);
  });
  document.addEventListener('click', (e) => {
    if (!$('settings').hidden && !e.target.closest('#settings, #settings-btn')) openSettings(false);
  });
  window.addEventListener('popstate', () => {
    const id = new URLSearchParams(location.search).get('thread');
    if (id && (!app.th || app.th.id !== id)) openThread(id, false);
    else if (!id && app.th) { setThread(null); }
  });
  matchMedia('(min-width: 861px)').addEventListener('change', (e) => { if (e.matches) drawer(false); });
}

async function loadConfig() {
  try {
    const cfg = await getJSON('/api/config');
    const r = cfg && cfg.models && cfg.models.reasoning;
    app.reasoning = Array.isArray(r) && r.length > 0;
  } catch (e) {
    notice(e.message);
  }
  $('think-row').hidden = !app.reasoning;
  renderChips();
}

function start() {
  applyTheme(store.get('theme', ''));
  setLang(pickLang(store.get('lang', ''), navigator.language));
  bindSettings();
  bind();
  loadConfig();
  refreshList();
  const id = new URLSearchParams(location.search).get('thread');
  if (id) openThread(id, false);
  else schedule();
}

start();
