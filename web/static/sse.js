// Server-sent events over fetch(): the chat stream is a POST, which EventSource cannot send.

// createParser returns a push/end pair that turns text into {id, event, data} events per the SSE rules:
// LF, CR or CRLF line ends, comment lines, multi-line data, and an id that sticks until changed.
export function createParser(onEvent) {
  let buf = '', data = [], event = '', lastId = '';
  const line = (l) => {
    if (l === '') {
      if (data.length) onEvent({ id: lastId, event: event || 'message', data: data.join('\n') });
      data = []; event = '';
      return;
    }
    if (l[0] === ':') return;
    const i = l.indexOf(':');
    const field = i < 0 ? l : l.slice(0, i);
    let value = i < 0 ? '' : l.slice(i + 1);
    if (value[0] === ' ') value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
    else if (field === 'id' && !value.includes('\0')) lastId = value;
  };
  const drain = (final) => {
    for (;;) {
      const m = /\r\n|\r|\n/.exec(buf);
      // A CR at the very end may be the first half of a CRLF split across chunks.
      if (!m || (!final && m[0] === '\r' && m.index === buf.length - 1)) break;
      line(buf.slice(0, m.index));
      buf = buf.slice(m.index + m[0].length);
    }
  };
  return {
    push(text) { buf += text; drain(false); },
    end() { drain(true); if (buf) line(buf); buf = ''; },
  };
}

// readStream feeds a fetch Response body to the parser until the body ends.
export async function readStream(body, onEvent) {
  const reader = body.getReader();
  const dec = new TextDecoder();
  const p = createParser(onEvent);
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    p.push(dec.decode(value, { stream: true }));
  }
  p.push(dec.decode());
  p.end();
}
