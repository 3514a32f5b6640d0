// Calls to the dashboard's own API (same origin; the session cookie rides along).

export async function getJson(url) {
  const res = await fetch(url, { credentials: 'same-origin' });
  if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  return await res.json();
}

export const runUrl = (name, rest = '') => `/api/runs/${encodeURIComponent(name)}${rest}`;

/** Server-sent events of some runs: handlers.plan(charts), .reset({run, records, live}), .update({run, record}), .live({run, live}). */
export function subscribe(runs, handlers) {
  const q = runs.map((r) => `run=${encodeURIComponent(r)}`).join('&');
  const es = new EventSource(`/api/events?${q}`);
  for (const ev of ['plan', 'reset', 'update', 'live']) es.addEventListener(ev, (e) => handlers[ev]?.(JSON.parse(e.data)));
  es.onerror = () => handlers.error?.();
  return es;
}

/** Element helper: el('td', {class: 'num'}, 'text', child...) (text only via textContent: nothing from a run is parsed as HTML). */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

export const fmt = (v) => (typeof v !== 'number' ? (v ?? '-') : Number.isInteger(v) ? String(v) : Math.abs(v) >= 1000 ? v.toFixed(0) : v.toPrecision(4));
