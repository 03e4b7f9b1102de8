// Thin fetch wrappers. Every failure becomes an ApiError whose message can be shown to the user as is.

export class ApiError extends Error {
  constructor(message, status, detail) {
    super(message);
    this.status = status; // 0 = the server could not be reached
    this.detail = detail || message;
  }
}

let t = (k) => k;
export function setTranslator(fn) { t = fn; }

async function fail(resp) {
  let detail = '';
  try {
    const text = await resp.text();
    try {
      const j = JSON.parse(text);
      detail = typeof j.detail === 'string' ? j.detail : j.error || JSON.stringify(j.detail ?? j);
    } catch {
      detail = text.slice(0, 300);
    }
  } catch { /* body unreadable: the status says enough */ }
  detail = detail || resp.statusText || String(resp.status);
  let msg;
  if (resp.status === 409) msg = t('err_busy', { msg: detail });
  else if (resp.status >= 400 && resp.status < 500) msg = t('err_rejected', { msg: detail });
  else msg = t('err_server', { status: resp.status, msg: detail });
  return new ApiError(msg, resp.status, detail);
}

export async function request(method, path, { body, signal, headers } = {}) {
  let resp;
  try {
    resp = await fetch(path, {
      method, signal, cache: 'no-store',
      headers: { ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}), ...headers },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(t('err_network'), 0, String(e.message || e));
  }
  if (!resp.ok) throw await fail(resp);
  return resp;
}

export async function getJSON(path, signal) {
  const resp = await request('GET', path, { signal });
  return resp.json();
}
