// `gsteer eval compare`: the paper's tables from saved eval results and downstream score
// files, every pooled number with its bootstrap SE over instances (eval/spread.ts).
//   Table 2   methods x (overall WCov, E-WCov, P, R, F1; WCov and F1 of Unseen User,
//             Unseen Task, Both Unseen; Ask, Ret.)            + table2-groups: every view
//   Table 3   ablation runs x (WCov, E-WCov, F1, Ask, Ret.)
//   Table 9   methods x thresholds x (WCov, E-WCov, F1)
//   Table 4   DRA x method x (P and its 4 dimensions, Q and its 3), overall
//   Table 8   DRA x method x (P, Q) for Overall, Unseen User, Unseen Task, Both Unseen
// Values are pooled exactly as `gsteer eval` pools them; the resamples of a view depend
// only on (seed, view, number of instances), so methods evaluated on the same instances
// are resampled together (a paired bootstrap).
import type { Estimate, Resampler } from './bootstrap.ts';
import { downstreamView, SCORE_KEYS, type DownstreamScores, type ScoreKey } from './downstream-scores.ts';
import type { EvalReport } from './report.ts';
import { viewResult, type MetricKey, type ViewResult } from './spread.ts';
import type { Column, Table } from './table.ts';
import { COMBINED_NOTE, VIEW_LABEL, VIEWS, type View } from './views.ts';

export interface Method {
  name: string; // --label, else the result's method.label
  file: string;
  result: Pick<EvalReport, 'method' | 'encoder' | 'extractor' | 'threshold' | 'episodes'>; // a saved result (v1 or v2)
}

export interface Spread {
  resample: Resampler;
  samples: number;
  level: number;
  seed: number;
}

const LABEL: Record<MetricKey, string> = { wcov: 'WCov', ewcov: 'E-WCov', precision: 'Prec.', recall: 'Rec.', f1: 'F1', meanAsk: 'Ask', meanRetrieve: 'Ret.' };
const DIGITS: Record<MetricKey, number> = { wcov: 4, ewcov: 4, precision: 4, recall: 4, f1: 4, meanAsk: 2, meanRetrieve: 2 };
const col = (view: View, k: MetricKey, prefix = view !== 'overall'): Column => ({
  key: `${view}.${k}`,
  label: prefix ? `${VIEW_LABEL[view]} ${LABEL[k]}` : LABEL[k],
  digits: DIGITS[k],
});

/** Pooled metrics and spread of a method's view at a threshold, computed once, when first asked. */
export class Intrinsic {
  private cache = new Map<Method, Map<string, ViewResult>>();
  constructor(readonly spread: Spread) {}
  at(m: Method, tau: number, view: View): ViewResult {
    const byKey = this.cache.get(m) ?? new Map<string, ViewResult>();
    this.cache.set(m, byKey);
    const key = `${tau} ${view}`;
    let v = byKey.get(key);
    if (!v) byKey.set(key, (v = viewResult(m.result.episodes, tau, view, this.spread.resample, this.spread.level)));
    return v;
  }
}

const spreadNote = (s: Spread) =>
  `± bootstrap standard error over instances (B = ${s.samples}, seed ${s.seed}; an instance's episodes are resampled together); the CSV adds the ${Math.round(s.level * 100)}% percentile interval.`;

function methodNotes(methods: readonly Method[]): string[] {
  const notes = methods.map((m) => {
    const ids = new Set(m.result.episodes.map((e) => e.instanceId));
    return `${m.name}: ${m.file} (${m.result.episodes.length} episodes of ${ids.size} instances; encoder ${m.result.encoder}, extractor ${m.result.extractor})`;
  });
  const setups = new Set(methods.map((m) => `${m.result.encoder}\u0000${m.result.extractor}`));
  if (setups.size > 1) notes.push('The results were scored with different encoders or extractors: their numbers are not comparable.');
  return notes;
}

function intrinsicTable(id: string, title: string, methods: readonly Method[], cols: Column[], tau: number, x: Intrinsic, extra: string[]): Table {
  return {
    id,
    title,
    labels: [{ key: 'method', label: 'Method' }],
    columns: cols,
    rows: methods.map((m) => {
      return {
        labels: [m.name],
        cells: cols.map((c) => {
          const [view, k] = c.key.split('.') as [View, MetricKey];
          return x.at(m, tau, view).est[k];
        }),
      };
    }),
    notes: [`Pooled over each view's episodes at threshold ${tau}; ${spreadNote(x.spread)}`, ...extra, ...methodNotes(methods)],
  };
}

export function table2(methods: readonly Method[], tau: number, x: Intrinsic): Table {
  const cols = [
    ...(['wcov', 'ewcov', 'precision', 'recall', 'f1'] as const).map((k) => col('overall', k)),
    ...(['unseen_user_combined', 'unseen_task_combined', 'both_unseen'] as const).flatMap((v) => [col(v, 'wcov'), col(v, 'f1')]),
    col('overall', 'meanAsk'),
    col('overall', 'meanRetrieve'),
  ];
  return intrinsicTable('table2', `Table 2: intrinsic evaluation (threshold ${tau})`, methods, cols, tau, x, [
    COMBINED_NOTE,
    'Ask / Ret.: mean Ask and Retrieve turns per episode (the Stop turn not counted).',
  ]);
}

export function table3(ablations: readonly Method[], tau: number, x: Intrinsic): Table {
  const cols = (['wcov', 'ewcov', 'f1', 'meanAsk', 'meanRetrieve'] as const).map((k) => col('overall', k));
  return intrinsicTable('table3', `Table 3: ablations (threshold ${tau})`, ablations, cols, tau, x, []);
}

/** Every view with every metric: the long form of Table 2 (one row per method and view). */
export function table2Groups(methods: readonly Method[], tau: number, x: Intrinsic): Table {
  const ks = ['wcov', 'ewcov', 'precision', 'recall', 'f1', 'meanAsk', 'meanRetrieve'] as const;
  return {
    id: 'table2-groups',
    title: `Table 2 by view (threshold ${tau})`,
    labels: [
      { key: 'method', label: 'Method' },
      { key: 'view', label: 'View' },
      { key: 'instances', label: 'Instances' },
      { key: 'episodes', label: 'Episodes' },
    ],
    columns: ks.map((k) => ({ key: k, label: LABEL[k], digits: DIGITS[k] })),
    rows: methods.flatMap((m) =>
      VIEWS.map((view) => {
        const v = x.at(m, tau, view);
        return { labels: [m.name, VIEW_LABEL[view], String(v.instances.length), String(v.metrics.episodes)], cells: ks.map((k) => v.est[k]) };
      }),
    ),
    notes: [
      `Pooled over each view's episodes; ${spreadNote(x.spread)}`,
      'Overall includes train-split episodes when the result has them; the four disjoint groups hold test instances only.',
      COMBINED_NOTE,
    ],
  };
}

export function table9(methods: readonly Method[], taus: readonly number[], x: Intrinsic): Table {
  const ks = ['wcov', 'ewcov', 'f1'] as const;
  return {
    id: 'table9',
    title: 'Table 9: threshold sensitivity (overall)',
    labels: [
      { key: 'method', label: 'Method' },
      { key: 'threshold', label: 'Threshold' },
    ],
    columns: ks.map((k) => ({ key: k, label: LABEL[k], digits: DIGITS[k] })),
    rows: methods.flatMap((m) => taus.map((t) => ({ labels: [m.name, t.toFixed(2)], cells: ks.map((k) => x.at(m, t, 'overall').est[k]) }))),
    notes: [`A target is covered (a factor matched) when its best cosine is at least the threshold; ${spreadNote(x.spread)}`],
  };
}

const SCORE_LABEL: Record<ScoreKey, string> = {
  p: 'P',
  goal: 'Goal',
  content: 'Content',
  presentation: 'Presentation',
  actionability: 'Actionability',
  q: 'Q',
  depth: 'Depth',
  logic: 'Logic',
  clarity: 'Clarity',
};

/** Rows of the downstream tables: per agent, the original query first, then the file's order. */
function downstreamTable(
  id: string,
  title: string,
  files: readonly DownstreamScores[],
  cells: readonly { view: View; k: ScoreKey; label: string }[],
  s: Spread,
  extra: string[],
): Table {
  const rows: Table['rows'] = [];
  const standIns: string[] = [];
  for (const f of files) {
    const agent = f.agent.model ? `${f.agent.name} (${f.agent.model})` : f.agent.name;
    if (f.agent.standIn || f.judge.standIn)
      standIns.push(
        `${agent}: ${[f.agent.standIn && 'the deep-research agent', f.judge.standIn && 'the judge'].filter(Boolean).join(' and ')} is the embedded stand-in; these are not paper numbers.`,
      );
    const ordered = [...f.methods.filter((m) => m.original), ...f.methods.filter((m) => !m.original)];
    const views = new Map<string, Record<ScoreKey, Estimate>>();
    for (const m of ordered)
      rows.push({
        labels: [agent, m.original ? 'Original Query' : m.name],
        cells: cells.map(({ view, k }) => {
          const key = `${m.name}\u0000${view}`;
          if (!views.has(key)) views.set(key, downstreamView(f, m.name, view, s.resample, s.level).est);
          return (views.get(key) as Record<ScoreKey, Estimate>)[k];
        }),
      });
  }
  const judges = [...new Set(files.map((f) => `${f.judge.model ?? 'unnamed judge'}, ${f.judge.rounds} rounds`))].join('; ');
  return {
    id,
    title,
    labels: [
      { key: 'dra', label: 'Downstream DRA' },
      { key: 'method', label: 'Method' },
    ],
    columns: cells.map(({ view, k, label }) => ({ key: `${view}.${k}`, label, digits: 2 })),
    rows,
    notes: [
      `A report's score is the mean of the judge's rounds (${judges}); a view's score the mean over its reports; ${spreadNote(s)}`,
      ...extra,
      ...standIns,
    ],
  };
}

export function table4(files: readonly DownstreamScores[], s: Spread): Table {
  return downstreamTable(
    'table4',
    'Table 4: downstream utility (P: personalization, Q: quality)',
    files,
    SCORE_KEYS.map((k) => ({ view: 'overall' as const, k, label: SCORE_LABEL[k] })),
    s,
    [],
  );
}

export function table8(files: readonly DownstreamScores[], s: Spread): Table {
  const views = ['overall', 'unseen_user_combined', 'unseen_task_combined', 'both_unseen'] as const;
  return downstreamTable(
    'table8',
    'Table 8: downstream P / Q on unseen settings',
    files,
    views.flatMap((view) => (['p', 'q'] as const).map((k) => ({ view, k, label: `${VIEW_LABEL[view]} ${SCORE_LABEL[k]}` }))),
    s,
    [COMBINED_NOTE],
  );
}

/** Every table the inputs allow, in paper order, and the cache Figure 3 reuses. */
export function buildTables(o: {
  methods: Method[];
  ablations: Method[];
  downstream: DownstreamScores[];
  tau: number;
  sweep: readonly number[];
  spread: Spread;
}): { tables: Table[]; intrinsic: Intrinsic } {
  const x = new Intrinsic(o.spread);
  const tables: Table[] = [];
  if (o.methods.length) tables.push(table2(o.methods, o.tau, x), table2Groups(o.methods, o.tau, x));
  if (o.ablations.length) tables.push(table3(o.ablations, o.tau, x));
  if (o.downstream.length) tables.push(table4(o.downstream, o.spread), table8(o.downstream, o.spread));
  if (o.methods.length && o.sweep.length)
    tables.push(
      table9(
        o.methods,
        [...new Set([...o.sweep])].sort((a, b) => a - b),
        x,
      ),
    );
  return { tables, intrinsic: x };
}
