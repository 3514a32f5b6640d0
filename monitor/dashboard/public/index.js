// The index page: the runs this dashboard serves, and overlaying some of them.
import { el, fmt, getJson, runUrl } from '/static/api.js';

const { runs, redis } = await getJson('/api/runs');
document.getElementById('redis').textContent = redis.map((r) => `Redis ${r.url}: ${r.ready ? 'answering (live updates, queue board)' : 'not reachable (metrics.jsonl only)'}`).join(' · ');
const body = document.querySelector('#runs tbody');
for (const r of runs) {
  body.append(el('tr', {},
    el('td', {}, el('input', { type: 'checkbox', value: r.name })),
    el('td', {}, el('a', { href: `/runs/${encodeURIComponent(r.name)}` }, r.name)),
    el('td', {}, r.runId), el('td', { class: 'num' }, String(r.epoch)), el('td', { class: 'num' }, String(r.updates)),
    el('td', { class: 'num' }, fmt(r.reward)), el('td', { class: `live-${r.live}` }, r.live === 'redis' ? 'Redis stream' : 'metrics.jsonl'),
    el('td', {}, el('a', { href: runUrl(r.name, '/config.yaml') }, 'config.yaml'), ' · ', el('a', { href: runUrl(r.name, '/run.json') }, 'run.json'))));
}
document.getElementById('overlay').addEventListener('click', () => {
  const names = [...document.querySelectorAll('#runs input:checked')].map((c) => c.value);
  if (!names.length) return;
  const [first, ...rest] = names;
  location.href = `/runs/${encodeURIComponent(first)}${rest.length ? `?overlay=${rest.map(encodeURIComponent).join(',')}` : ''}`;
});
