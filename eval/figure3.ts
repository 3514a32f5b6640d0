// Paper Figure 3, the utility-burden trade-off: (a) overall E-WCov against the mean number
// of questions asked (Ask turns per episode), one point per method with ± SE bars on both
// axes; (b) the E-WCov gain over Direct Rewrite per question asked,
//   gain_m = (E-WCov_m - E-WCov_direct) / Ask_m          (methods that ask, Ask_m > 0)
// whose SE comes from the same resamples applied to m and to Direct Rewrite (paired: only
// when both were evaluated on the same instances). Pure: the data, a table of it, and the
// Vega-Lite spec (eval/render-figure.ts draws it).
import type { TopLevelSpec } from 'vega-lite';
import { summarize, type Estimate } from './bootstrap.ts';
import type { Intrinsic, Method } from './compare-tables.ts';
import type { Table } from './table.ts';

export interface Figure3 {
  points: { method: string; ask: Estimate; ewcov: Estimate }[];
  gains: { method: string; gain: Estimate }[]; // empty without a reference
  reference: string | null;
  notes: string[];
}

export const AXIS = { questions: 'Avg. questions per episode', ewcov: 'E-WCov', method: 'Method', gain: 'E-WCov gain per question' } as const;

/** `reference`: the Direct Rewrite row (--reference NAME, else the result with baseline "direct"). */
export function figure3Data(methods: readonly Method[], tau: number, x: Intrinsic, reference: Method | null): Figure3 {
  const points = methods.map((m) => ({ method: m.name, ask: x.at(m, tau, 'overall').est.meanAsk, ewcov: x.at(m, tau, 'overall').est.ewcov }));
  const notes: string[] = [];
  const gains: Figure3['gains'] = [];
  if (!reference) notes.push('No Direct Rewrite result (baseline "direct" or --reference NAME): panel (b) is left out.');
  const ref = reference ? x.at(reference, tau, 'overall') : null;
  for (const m of methods) {
    if (!ref || m === reference) continue;
    const v = x.at(m, tau, 'overall');
    const ask = v.metrics.meanAsk;
    if (!ask) {
      notes.push(`${m.name} asks no questions: no gain per question.`);
      continue;
    }
    const point = v.metrics.ewcov === null || ref.metrics.ewcov === null ? null : (v.metrics.ewcov - ref.metrics.ewcov) / ask;
    const paired = v.instances.join('\u0000') === ref.instances.join('\u0000');
    if (!paired) notes.push(`${m.name} and ${reference?.name} were evaluated on different instances: its gain has no SE.`);
    const reps = paired
      ? v.reps.map((r, b) => {
          const e0 = ref.reps[b]?.ewcov ?? null;
          return r.ewcov === null || e0 === null || !r.meanAsk ? null : (r.ewcov - e0) / r.meanAsk;
        })
      : [];
    gains.push({ method: m.name, gain: summarize(point, reps, x.spread.level) });
  }
  return { points, gains, reference: reference?.name ?? null, notes };
}

/** The figure's numbers as a table (figure3.md / figure3.csv). */
export function figure3Table(f: Figure3, tau: number): Table {
  const none: Estimate = { value: null, se: null, lo: null, hi: null, defined: 0, samples: 0 };
  return {
    id: 'figure3',
    title: `Figure 3: E-WCov against questions asked (threshold ${tau})`,
    labels: [{ key: 'method', label: 'Method' }],
    columns: [
      { key: 'overall.ewcov', label: AXIS.ewcov, digits: 4 },
      { key: 'overall.meanAsk', label: 'Ask', digits: 2 },
      { key: 'gainPerQuestion', label: f.reference ? `Gain over ${f.reference} per question` : 'Gain per question', digits: 4 },
    ],
    rows: f.points.map((p) => ({ labels: [p.method], cells: [p.ewcov, p.ask, f.gains.find((g) => g.method === p.method)?.gain ?? none] })),
    notes: f.notes,
  };
}

/** Fonts tried in order by browsers and by the PNG renderer (DejaVu ships with most Linux systems). */
export const FONT = 'DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif';

const bar = (e: Estimate) => ({ value: e.value, lo: e.value === null ? null : e.value - (e.se ?? 0), hi: e.value === null ? null : e.value + (e.se ?? 0) });

export function figure3Spec(f: Figure3, tau: number): TopLevelSpec {
  const pts = f.points
    .filter((p) => p.ewcov.value !== null && p.ask.value !== null)
    .map((p) => {
      const [a, e] = [bar(p.ask), bar(p.ewcov)];
      return { method: p.method, ask: a.value, askLo: a.lo, askHi: a.hi, ewcov: e.value, ewcovLo: e.lo, ewcovHi: e.hi };
    });
  const x = { field: 'ask', type: 'quantitative', title: AXIS.questions } as const;
  const y = { field: 'ewcov', type: 'quantitative', title: AXIS.ewcov } as const;
  const color = { field: 'method', type: 'nominal', title: AXIS.method, sort: null } as const;
  const tradeoff = {
    name: 'tradeoff',
    title: { text: '(a) E-WCov vs. questions asked', subtitle: `threshold ${tau}; bars: ± bootstrap SE`, anchor: 'start' },
    width: 320,
    height: 260,
    data: { values: pts },
    layer: [
      { mark: 'rule', encoding: { x, y: { field: 'ewcovLo', type: 'quantitative' }, y2: { field: 'ewcovHi' }, color } },
      { mark: 'rule', encoding: { y, x: { field: 'askLo', type: 'quantitative' }, x2: { field: 'askHi' }, color } },
      {
        name: 'methods',
        mark: { type: 'point', filled: true, size: 90, opacity: 1 },
        encoding: { x, y, color, tooltip: [{ field: 'method' }, { field: 'ask', format: '.2f' }, { field: 'ewcov', format: '.4f' }] },
      },
      { mark: { type: 'text', align: 'left', dx: 7, dy: -7, fontSize: 10 }, encoding: { x, y, text: { field: 'method' } } },
    ],
  };
  const gains = f.gains.filter((g) => g.gain.value !== null).map((g) => ({ method: g.method, ...bar(g.gain) }));
  const gx = { field: 'method', type: 'nominal', title: AXIS.method, sort: null, axis: { labelAngle: -30 } } as const;
  const gain = {
    name: 'gain',
    title: { text: `(b) E-WCov gain over ${f.reference} per question`, subtitle: 'methods that ask; bars: ± paired bootstrap SE', anchor: 'start' },
    width: { step: 56 },
    height: 260,
    data: { values: gains },
    layer: [
      { name: 'gains', mark: 'bar', encoding: { x: gx, y: { field: 'value', type: 'quantitative', title: AXIS.gain }, color } },
      { mark: 'rule', encoding: { x: gx, y: { field: 'lo', type: 'quantitative' }, y2: { field: 'hi' } } },
    ],
  };
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    config: { font: FONT, view: { stroke: '#ccc' } },
    background: 'white',
    hconcat: f.reference && gains.length ? [tradeoff, gain] : [tradeoff],
  } as TopLevelSpec;
}
