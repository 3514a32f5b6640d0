// One run's page (/runs/<run>?overlay=a,b): charts from the server's plan, kept live by
// server-sent events, the controls (EMA smoothing, x axis, overlaid runs) and the table of
// an update's trajectories. window.gsteerDashboard exposes the uPlot instances by chart id
// (their .data is what is drawn) for tests and for the console.
import { el, fmt, getJson, runUrl, subscribe } from '/static/api.js';
import { chartData, makeChart } from '/static/charts.js';
import { showTrajectories } from '/static/trajectories.js';

const primary = decodeURIComponent(location.pathname.split('/').filter(Boolean).pop());
const params = new URLSearchParams(location.search);
const state = {
  overlay: (params.get('overlay') ?? '').split(',').filter((n) => n && n !== primary),
  records: new Map(), // run -> records
  live: new Map(), // run -> 'redis' | 'file'
  plan: [],
  charts: new Map(), // id -> uPlot
  x: 'step',
  smoothing: 0,
  es: null,
};
const dash = (window.gsteerDashboard = { charts: {}, records: {}, events: 0, ready: false });

const runs = () => [primary, ...state.overlay];
const runData = () => runs().map((name) => ({ name, records: state.records.get(name) ?? [] }));
const opts = () => ({ x: state.x, smoothing: state.smoothing });

function rebuildCharts() {
  for (const u of state.charts.values()) u.destroy();
  state.charts.clear();
  dash.charts = {};
  const root = document.getElementById('charts');
  root.replaceChildren();
  const sections = new Map();
  for (const spec of state.plan) {
    if (!sections.has(spec.section)) {
      const grid = el('div', { class: 'grid' });
      root.append(el('section', { class: 'section' }, el('h2', {}, spec.section), grid));
      sections.set(spec.section, grid);
    }
    const box = el('div', { class: 'chart', 'data-chart': spec.id }, el('h3', {}, spec.title));
    sections.get(spec.section).append(box);
    const u = makeChart(box, spec, runData(), opts());
    state.charts.set(spec.id, u);
    dash.charts[spec.id] = u;
  }
}

let pending = false;
function redraw() {
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => {
    pending = false;
    for (const spec of state.plan) state.charts.get(spec.id)?.setData(chartData(spec, runData(), opts()));
    showInfo();
  });
}

function showInfo() {
  const box = document.getElementById('runinfo');
  box.replaceChildren(...runs().map((name) => {
    const recs = state.records.get(name) ?? [];
    const live = state.live.get(name) ?? 'file';
    return el('span', { class: 'run' },
      el('b', {}, name), ` ${recs.length} update(s), last reward ${fmt(recs.at(-1)?.reward)} · `,
      el('span', { class: `live-${live}` }, live === 'redis' ? 'live: Redis stream' : 'live: watching metrics.jsonl'), ' · ',
      el('a', { href: runUrl(name, '/config.yaml'), target: '_blank' }, 'config.yaml'), ' · ',
      el('a', { href: runUrl(name, '/run.json'), target: '_blank' }, 'run.json'));
  }));
  dash.records = Object.fromEntries(state.records);
}

function connect() {
  state.es?.close();
  state.es = subscribe(runs(), {
    plan(plan) {
      state.plan = plan;
      rebuildCharts();
    },
    reset({ run, records, live }) {
      state.records.set(run, records);
      state.live.set(run, live);
      redraw();
      if (run === primary) trajectories.refresh();
    },
    update({ run, record }) {
      state.records.get(run)?.push(record);
      dash.events++;
      redraw();
      if (run === primary) trajectories.refresh();
    },
    live({ run, live }) {
      state.live.set(run, live);
      showInfo();
    },
  });
  dash.ready = true;
}

async function overlayControls() {
  const { runs: all } = await getJson('/api/runs');
  const box = document.getElementById('overlay');
  const others = all.filter((r) => r.name !== primary);
  if (!others.length) box.append(el('span', { class: 'small' }, 'no other run is served (gsteer monitor RUN_DIR... --serve)'));
  for (const r of others) {
    const cb = el('input', { type: 'checkbox', value: r.name });
    cb.checked = state.overlay.includes(r.name);
    cb.addEventListener('change', () => {
      state.overlay = [...box.querySelectorAll('input:checked')].map((c) => c.value);
      const q = state.overlay.length ? `?overlay=${state.overlay.map(encodeURIComponent).join(',')}` : '';
      history.replaceState(null, '', `${location.pathname}${q}`);
      state.records.clear();
      connect();
    });
    box.append(el('label', {}, cb, ` ${r.name} `));
  }
}

document.getElementById('title').textContent = primary;
document.title = `${primary} · gsteer`;
const slider = document.getElementById('smoothing');
slider.addEventListener('input', () => {
  state.smoothing = Number(slider.value);
  document.getElementById('smoothing-value').textContent = state.smoothing.toFixed(2);
  redraw();
});
document.getElementById('xaxis').addEventListener('change', (e) => {
  state.x = e.target.value;
  rebuildCharts(); // axis formatting changes with the x key
});
const trajectories = showTrajectories(primary, document.getElementById('traj-step'), document.getElementById('traj-follow'), document.getElementById('traj-table'));
connect();
overlayControls().catch((e) => console.error(e));
window.addEventListener('resize', () => {
  for (const [id, u] of state.charts) {
    const box = document.querySelector(`[data-chart="${CSS.escape(id)}"]`);
    if (box) u.setSize({ width: Math.max(300, box.clientWidth - 12), height: 220 });
  }
});
