// The view model of one thread, folded from chat stream events (live or replayed) and user turns. No DOM here:
// app.js renders the blocks this produces.

export const STEP_AGENTS = { research: 'researcher', analysis: 'analyst', processing: 'coder' };
const RESEARCH = new Set(['researcher', 'analyst', 'coder']);
const RANK = { pending: 0, running: 1, done: 2, failed: 2, stopped: 2 };

export function newThread(id) {
  return {
    id, title: '', blocks: [], msgs: new Map(), calls: new Map(), curStep: null, lastMsg: null,
    citations: [], interrupt: null, lastId: 0, agent: '', runEnded: true, dirty: new Set(), seq: 0,
  };
}

const touch = (th, b) => b && th.dirty.add(b);
const add = (th, b) => { b.key ??= 'b' + th.seq++; th.blocks.push(b); touch(th, b); return b; };
export const lastPlan = (th) => th.blocks.findLast((b) => b.type === 'plan');

export function addUser(th, text, kind = 'msg') {
  th.runEnded = false;
  th.agent = '';
  return add(th, { type: 'user', text, kind });
}

export function addNote(th, text, tone) {
  return add(th, { type: 'note', text, tone });
}

// apply folds one event into the thread. It returns true when the event ends the current run.
export function apply(th, name, d, id) {
  if (id && +id > th.lastId) th.lastId = +id;
  if (!d || typeof d !== 'object') return false;
  // A server closes the open message when a run stops; the step it "finished" did not really finish.
  const closed = th.justDone;
  th.justDone = null;
  switch (name) {
    case 'message_chunk': case 'tool_calls': case 'tool_call_chunks':
      onMessage(th, name, d);
      break;
    case 'tool_call_result': {
      const e = th.calls.get(d.tool_call_id);
      if (e) { e.call.result = typeof d.content === 'string' ? d.content : JSON.stringify(d.content ?? ''); touch(th, e.msg.block); }
      break;
    }
    case 'interrupt': {
      th.interrupt = { id: d.id, content: d.content || '', options: Array.isArray(d.options) ? d.options : [] };
      const pb = lastPlan(th);
      if (pb && th.lastMsg && th.lastMsg === pb.msg) { pb.review = th.interrupt; touch(th, pb); }
      th.runEnded = true;
      break;
    }
    case 'citations':
      th.citations = Array.isArray(d.citations) ? d.citations : [];
      touch(th, th.blocks.findLast((b) => b.type === 'report'));
      th.runEnded = true;
      break;
    case 'error':
      if (closed && d.reason === 'cancelled') { closed.status = 'running'; th.curStep = closed; }
      closeStep(th, d.reason === 'cancelled' ? 'stopped' : 'failed');
      if (d.reason === 'cancelled') addNote(th, '', 'cancelled');
      else addNote(th, d.error || '', 'error');
      th.runEnded = true;
      break;
  }
  return th.runEnded;
}

function onMessage(th, name, d) {
  let m = th.msgs.get(d.id);
  if (!m) m = createMsg(th, d);
  if (typeof d.content === 'string') m.content += d.content;
  if (typeof d.reasoning_content === 'string') m.reasoning += d.reasoning_content;
  if (name === 'tool_calls' && Array.isArray(d.tool_calls)) {
    for (const tc of d.tool_calls) {
      if (!tc || !tc.name) continue;
      let c = m.calls.find((x) => x.id && x.id === tc.id);
      if (!c) { c = { id: tc.id || '', name: tc.name, args: null, argsText: '', result: null }; m.calls.push(c); }
      if (tc.args && typeof tc.args === 'object' && Object.keys(tc.args).length) c.args = tc.args;
      if (c.id) th.calls.set(c.id, { msg: m, call: c });
      m.lastCall = c;
    }
  }
  if (Array.isArray(d.tool_call_chunks)) {
    for (const ch of d.tool_call_chunks) {
      const c = ch && ch.id ? m.calls.find((x) => x.id === ch.id) : m.lastCall;
      if (!c) continue;
      c.argsText = ch.id ? ch.args || '' : c.argsText + (ch.args || '');
      m.lastCall = c;
    }
  }
  th.agent = m.agent;
  if (d.finish_reason) finish(th, m, d.finish_reason);
  touch(th, m.block);
}

function createMsg(th, d) {
  const m = { id: d.id, agent: d.agent || '', content: '', reasoning: '', calls: [], finish: '', block: null, step: null };
  th.msgs.set(d.id, m);
  th.lastMsg = m;
  th.runEnded = false;
  if (th.interrupt) {
    th.interrupt = null;
    for (const b of th.blocks) if (b.review) { b.review = null; touch(th, b); }
  }
  if (m.agent === 'planner') {
    closeStep(th, 'failed');
    for (const b of th.blocks) if (b.type === 'plan' && !b.superseded) { b.superseded = true; touch(th, b); }
    m.block = add(th, { type: 'plan', msg: m, plan: null, steps: [], extra: [], review: null });
  } else if (RESEARCH.has(m.agent)) {
    attachToStep(th, m);
  } else if (m.agent === 'reporter') {
    closeStep(th, 'failed');
    m.block = add(th, { type: 'report', msg: m });
  } else {
    m.block = add(th, { type: 'bubble', msg: m });
  }
  return m;
}

function finish(th, m, reason) {
  m.finish = reason;
  for (const c of m.calls) if (!c.args) c.args = parseLoose(decodeArgs(c.argsText)) || {};
  const dr = m.calls.find((c) => c.name === 'direct_response');
  if (dr && typeof dr.args.message === 'string' && !m.content.trim()) m.content = dr.args.message;
  if (m.agent === 'coordinator') {
    const handoff = m.calls.some((c) => c.name.startsWith('handoff'));
    if (handoff) th.agent = 'background';
    else th.runEnded = true;
  }
  if (m.agent === 'planner') {
    ensureSteps(th, m.block);
    th.agent = 'planner';
  }
  if (m.step && reason !== 'tool_calls') {
    m.step.status = 'done';
    th.justDone = m.step;
    if (th.curStep === m.step) th.curStep = null;
    touch(th, m.block);
  }
  if (m.agent === 'reporter') th.runEnded = true;
}

// planOf parses the (possibly still streaming) plan JSON of a plan block.
export function planOf(b) {
  if (b.msg && b.parsedLen !== b.msg.content.length) {
    b.parsedLen = b.msg.content.length;
    const p = parseLoose(b.msg.content);
    if (p && typeof p === 'object' && !Array.isArray(p)) b.plan = p;
  }
  return b.plan;
}

function ensureSteps(th, b) {
  const p = planOf(b);
  const steps = p && Array.isArray(p.steps) ? p.steps : [];
  b.steps = steps.map((s, i) => b.steps[i] || { status: 'pending', error: '', acts: [] });
  if (p && p.title) th.title = p.title;
}

function attachToStep(th, m) {
  const pb = lastPlan(th);
  if (!pb) {
    m.block = add(th, { type: 'acts', acts: [m] });
    return;
  }
  if (!pb.steps.length) ensureSteps(th, pb);
  let s = th.curStep;
  if (s && s.agent !== m.agent) { closeStep(th, 'failed'); s = null; }
  if (!s) {
    const types = (planOf(pb) || {}).steps || [];
    const idx = pb.steps.findIndex((x, i) => x.status === 'pending' && STEP_AGENTS[(types[i] || {}).step_type] === m.agent);
    s = pb.steps[idx >= 0 ? idx : pb.steps.findIndex((x) => x.status === 'pending')];
    if (s) { s.status = 'running'; s.agent = m.agent; th.curStep = s; }
  }
  if (s) { s.acts.push(m); m.step = s; } else pb.extra.push(m);
  m.block = pb;
}

// closeStep ends a step that never produced its final message (its agent failed or was stopped).
function closeStep(th, status) {
  const s = th.curStep;
  if (!s) return;
  if (s.status === 'running') s.status = status;
  th.curStep = null;
  touch(th, lastPlan(th));
}

// overlay applies the server's snapshot of a thread (GET /api/threads/{id}) on top of what the events built.
export function overlay(th, snap) {
  if (!snap) return;
  if (snap.title) th.title = snap.title;
  const pb = lastPlan(th);
  const steps = snap.plan && Array.isArray(snap.plan.steps) ? snap.plan.steps : null;
  if (pb && steps) {
    if (!pb.steps.length) ensureSteps(th, pb);
    const mine = (planOf(pb) || {}).steps || [];
    const same = mine.length === steps.length && steps.every((s, i) => (mine[i] || {}).title === s.title);
    if (same) {
      steps.forEach((s, i) => {
        const v = pb.steps[i];
        // The snapshot may lag behind the events: never move a step backwards.
        const st = s.status === 'running' && snap.status !== 'running' ? 'stopped' : s.status;
        if (st && RANK[st] >= (RANK[v.status] || 0)) v.status = st;
        v.error = s.error || '';
      });
      touch(th, pb);
    }
  }
  if (snap.status === 'waiting_for_review' && snap.interrupt && pb && !pb.review && !pb.superseded) {
    th.interrupt = pb.review = { id: snap.interrupt.id, content: snap.interrupt.content, options: snap.interrupt.options || [] };
    touch(th, pb);
  }
  if (Array.isArray(snap.citations) && snap.citations.length && !th.citations.length) th.citations = snap.citations;
}

// fromSnapshot renders a thread from its snapshot alone, for servers that cannot replay its events.
export function fromSnapshot(th, snap) {
  for (const msg of snap.messages || []) {
    if (msg.role === 'user') addUser(th, msg.content, msg.kind === 'feedback' ? 'edit' : 'msg');
    else if (msg.content && (!msg.agent || msg.agent === 'coordinator')) {
      add(th, { type: 'bubble', msg: { id: '', agent: 'coordinator', content: msg.content, reasoning: '', calls: [], finish: 'stop' } });
    }
  }
  if (snap.plan) {
    const pb = add(th, { type: 'plan', msg: null, plan: snap.plan, steps: [], extra: [], review: null });
    pb.steps = (snap.plan.steps || []).map((s) => ({ status: s.status === 'running' && snap.status !== 'running' ? 'stopped' : s.status || 'pending', error: s.error || '', acts: [] }));
  }
  if (snap.report) {
    add(th, { type: 'report', msg: { id: '', agent: 'reporter', content: snap.report, reasoning: '', calls: [], finish: 'stop' } });
  }
  if (snap.status === 'failed' && snap.error) addNote(th, snap.error, 'error');
  if (snap.status === 'cancelled') addNote(th, '', 'cancelled');
  th.runEnded = true;
  overlay(th, snap);
}

const decodeArgs = (s) => String(s || '').replace(/&#(91|93|123|125);/g, (m, n) => String.fromCharCode(+n));

// parseLoose reads JSON that may be fenced, wrapped in prose, followed by junk, or still streaming (cut off).
export function parseLoose(text) {
  const s0 = String(text || '');
  const start = s0.indexOf('{');
  if (start < 0) return null;
  let s = s0.slice(start);
  const stack = [], commas = [];
  let inStr = false, escd = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (inStr) {
      if (escd) escd = false;
      else if (c === '\\') escd = true;
      else if (c === '"') inStr = false;
      continue;
    }
    if (c === '"') inStr = true;
    else if (c === '{' || c === '[') stack.push(c === '{' ? '}' : ']');
    else if (c === '}' || c === ']') {
      stack.pop();
      if (!stack.length) return tryParse(s.slice(0, i + 1));
    } else if (c === ',') commas.push(i);
  }
  // Cut off mid-stream: close what is open, dropping incomplete trailing members until it parses.
  if (escd) s = s.slice(0, -1);
  let tail = inStr ? '"' : '';
  for (let n = 0; n < 40; n++) {
    const closed = closeJSON(s + tail);
    const v = tryParse(closed);
    if (v) return v;
    const cut = commas.pop();
    if (cut === undefined) return null;
    s = s.slice(0, cut);
    tail = '';
  }
  return null;
}

function closeJSON(s) {
  const stack = [];
  let inStr = false, escd = false;
  for (const c of s) {
    if (inStr) { if (escd) escd = false; else if (c === '\\') escd = true; else if (c === '"') inStr = false; continue; }
    if (c === '"') inStr = true;
    else if (c === '{') stack.push('}');
    else if (c === '[') stack.push(']');
    else if (c === '}' || c === ']') stack.pop();
  }
  return s.replace(/[\s,]+$/, '') + stack.reverse().join('');
}

function tryParse(s) {
  try { return JSON.parse(s); } catch { return null; }
}

// Tool results, in the formats deer-flow's tools produce.
export function searchResults(result) {
  const v = tryParse(result || '');
  const arr = Array.isArray(v) ? v : v && Array.isArray(v.results) ? v.results : null;
  return arr ? arr.filter((r) => r && r.url && (!r.type || r.type === 'page')) : null;
}

export function codeOutput(result) {
  const r = String(result || '');
  if (r.includes('Error executing code:\n')) {
    const i = r.indexOf('```\nError: ');
    return { error: i >= 0 ? r.slice(i + 11) : r };
  }
  const i = r.indexOf('```\nStdout: ');
  return { out: i >= 0 ? r.slice(i + 12) : r };
}

export const isToolError = (result) => typeof result === 'string' && /^Error/.test(result);
