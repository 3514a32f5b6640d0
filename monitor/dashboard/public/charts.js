// One uPlot chart per ChartSpec (monitor/dashboard/charts.ts): for each run, each series'
// line, and for a series with a band its mean ± std as two thin lines with the band filled
// between them. Several runs share the x axis through uPlot.join (nulls where a run has no
// point); the cursor is synced across charts so hovering one shows every chart's values.
import uPlot from '/static/uPlot.esm.js';
import { fmt } from '/static/api.js';
import { clock, ema, runningWall } from '/static/smooth.js';

const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#17becf', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22'];
const DASHES = [[], [6, 3], [2, 2], [8, 3, 2, 3]];
const STEP_INCRS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000]; // updates are whole numbers
const num = (v) => (v === null || v === undefined ? '' : fmt(v));
const alpha = (hex, a) => `${hex}${Math.round(a * 255).toString(16).padStart(2, '0')}`;

/** Columns of one run for one chart, in series order: [x, line, (hi, lo)?, line, ...]. */
function runTable(spec, records, o) {
  const xs = o.x === 'wall_time' ? runningWall(records) : records.map((r) => r.step);
  const col = (key) => ema(records.map((r) => (typeof r[key] === 'number' ? r[key] : null)), o.smoothing);
  const cols = [];
  for (const s of spec.series) {
    const m = col(s.key);
    cols.push(m);
    if (s.band) {
      const sd = col(s.band);
      cols.push(m.map((v, i) => (v === null || sd[i] === null ? null : v + sd[i])));
      cols.push(m.map((v, i) => (v === null || sd[i] === null ? null : v - sd[i])));
    }
  }
  // uPlot wants x ascending without nulls.
  const keep = xs.map((x, i) => (x === null ? -1 : i)).filter((i) => i >= 0);
  return [keep.map((i) => xs[i]), ...cols.map((c) => keep.map((i) => c[i]))];
}

/** The aligned data of a chart over the runs ([{name, records}]). */
export function chartData(spec, runs, o) {
  const tables = runs.map((r) => runTable(spec, r.records, o));
  return tables.length === 1 ? tables[0] : uPlot.join(tables);
}

function seriesOptions(spec, runNames) {
  const series = [{ label: 'x' }];
  const bands = [];
  runNames.forEach((run, ri) => {
    spec.series.forEach((s, si) => {
      const color = runNames.length > 1 ? PALETTE[ri % PALETTE.length] : PALETTE[si % PALETTE.length];
      const dash = runNames.length > 1 ? DASHES[si % DASHES.length] : [];
      const label = runNames.length > 1 ? `${run} ${s.key}` : s.key;
      const line = { label, stroke: color, width: 1.5, dash, spanGaps: true, value: (_u, v) => num(v) };
      series.push(line);
      if (s.band) {
        // The band's edges stay out of the legend; the line's hover value reads "mean ± std".
        const hi = series.length;
        line.value = (u, v, _si, idx) => (v === null || idx === null ? '' : `${num(v)} ± ${num(u.data[hi][idx] - v)}`);
        const edge = { class: 'band', stroke: alpha(color, 0.35), width: 0.5, spanGaps: true, points: { show: false } };
        series.push({ ...edge, label: `${label} +std` }, { ...edge, label: `${label} -std` });
        bands.push({ series: [hi, hi + 1], fill: alpha(color, 0.12) });
      }
    });
  });
  return { series, bands };
}

export function makeChart(container, spec, runs, o) {
  const { series, bands } = seriesOptions(spec, runs.map((r) => r.name));
  const wall = o.x === 'wall_time';
  const opts = {
    width: Math.max(300, container.clientWidth - 12),
    height: 220,
    series: series.map((s, i) => (i === 0 ? { label: wall ? 'wall time' : 'update', value: (_u, v) => (v === null ? '' : wall ? clock(v) : v) } : s)),
    bands,
    // uPlot ranges a flat series to [0, 100]; a constant (often 0) gets a band around itself.
    scales: { x: { time: false }, y: { range: (_u, min, max) => (min === null || min !== max ? uPlot.rangeNum(min ?? 0, max ?? 1, 0.1, true) : [min - (Math.abs(min) || 1) / 2, max + (Math.abs(max) || 1) / 2]) } },
    axes: [wall ? { values: (_u, ticks) => ticks.map(clock) } : { incrs: STEP_INCRS }, { size: 56 }],
    cursor: { sync: { key: 'gsteer' } },
    legend: { live: true },
  };
  return new uPlot(opts, chartData(spec, runs, o), container);
}
