// The evaluation report (format in eval/README.md): pooled metrics overall and per split
// group at every threshold, plus every scored episode (factors, best cosines), so a reader
// can recompute any number. `formatTable` prints the paper's Table 2 columns. v2 adds the
// bootstrap spread of every pooled metric per view (eval/spread.ts) and the episodes per
// instance; `gsteer eval compare` reads v1 and v2 (it recomputes both from `episodes`).
import { EVAL_GROUPS, type EvalGroup } from '../data/splits.ts';
import { pooledMetrics, type GroupMetrics } from './metrics.ts';
import { toSims, type ScoredEpisode } from './score.ts';
import { spreadSection, type BootstrapSettings, type SpreadSection } from './spread.ts';

export interface ThresholdResult {
  threshold: number;
  overall: GroupMetrics;
  groups: Record<EvalGroup, GroupMetrics>;
}

export interface EvalReport {
  format: 'gsteer-eval';
  v: 2;
  method: { baseline: string; label: string; model: string | null; source: 'episodes' | 'trajectories'; adapter?: string };
  encoder: string;
  extractor: string;
  threshold: number; // the main threshold (method §8: 0.55)
  results: ThresholdResult[]; // one per threshold, ascending; the main one included
  episodesPerInstance: number | null; // eval.episodesPerInstance when episodes were run; null for recorded trajectories
  spread: SpreadSection; // per threshold of `results`
  episodes: ScoredEpisode[];
}

export function thresholdResult(scored: readonly ScoredEpisode[], tau: number): ThresholdResult {
  const sims = scored.map(toSims);
  const groups = {} as Record<EvalGroup, GroupMetrics>;
  for (const g of EVAL_GROUPS)
    groups[g] = pooledMetrics(
      sims.filter((_, k) => scored[k]?.group === g),
      tau,
    );
  return { threshold: tau, overall: pooledMetrics(sims, tau), groups };
}

export interface ReportOptions {
  threshold: number;
  sweep: readonly number[];
  method: EvalReport['method'];
  encoder: string;
  extractor: string;
  episodesPerInstance: number | null;
  bootstrap: BootstrapSettings;
}

export function buildReport(scored: ScoredEpisode[], opts: ReportOptions): EvalReport {
  const taus = [...new Set([opts.threshold, ...opts.sweep])].sort((a, b) => a - b);
  return {
    format: 'gsteer-eval',
    v: 2,
    method: opts.method,
    encoder: opts.encoder,
    extractor: opts.extractor,
    threshold: opts.threshold,
    results: taus.map((t) => thresholdResult(scored, t)),
    episodesPerInstance: opts.episodesPerInstance,
    spread: spreadSection(scored, taus, opts.bootstrap),
    episodes: scored,
  };
}

const f4 = (x: number | null) => (x === null ? 'n/a' : x.toFixed(4));
const f1d = (x: number | null) => (x === null ? 'n/a' : x.toFixed(1));

function row(name: string, m: GroupMetrics): string {
  const cells = [
    name.padEnd(12),
    String(m.episodes).padStart(4),
    f4(m.wcov),
    f4(m.ewcov),
    f4(m.precision),
    f4(m.recall),
    f4(m.f1),
    `${f1d(m.meanAsk)}/${f1d(m.meanRetrieve)}`,
    `${m.stopped}/${m.episodes}`,
  ];
  return cells.map((c, i) => (i < 2 ? c : c.padStart(i >= 7 ? 9 : 7))).join(' ');
}

/** One table per threshold shown: overall and the four groups (method §8). */
export function formatTable(r: ThresholdResult, title: string): string {
  const head = [
    'group'.padEnd(12),
    'eps'.padStart(4),
    'WCov'.padStart(7),
    'E-WCov'.padStart(7),
    'Prec.'.padStart(7),
    'Rec.'.padStart(7),
    'F1'.padStart(7),
    'Ask/Ret.'.padStart(9),
    'stopped'.padStart(9),
  ].join(' ');
  const lines = [`${title} (threshold ${r.threshold})`, head, row('overall', r.overall)];
  for (const g of EVAL_GROUPS) lines.push(row(g, r.groups[g]));
  return lines.join('\n');
}

/** The sweep as one compact table: WCov / E-WCov / F1 overall per threshold (paper Table 9). */
export function formatSweep(results: readonly ThresholdResult[]): string {
  const lines = [`${'threshold'.padEnd(9)} ${'WCov'.padStart(7)} ${'E-WCov'.padStart(7)} ${'F1'.padStart(7)}`];
  for (const r of results)
    lines.push(`${r.threshold.toFixed(2).padEnd(9)} ${f4(r.overall.wcov).padStart(7)} ${f4(r.overall.ewcov).padStart(7)} ${f4(r.overall.f1).padStart(7)}`);
  return lines.join('\n');
}

/** Several evaluations next to each other (e.g. the SFT and the GRPO adapter, per split): overall rows. */
export function formatSideBySide(rows: readonly { label: string; split: string; m: GroupMetrics }[]): string {
  const w = Math.max(8, ...rows.map((r) => r.label.length));
  const sw = Math.max(5, ...rows.map((r) => r.split.length));
  const head = [
    'policy'.padEnd(w),
    'split'.padEnd(sw),
    'eps'.padStart(4),
    'WCov'.padStart(7),
    'E-WCov'.padStart(7),
    'F1'.padStart(7),
    'Ask'.padStart(5),
    'Retr.'.padStart(5),
    'valid Stops'.padStart(11),
  ].join(' ');
  const line = ({ label, split, m }: (typeof rows)[number]) =>
    [
      label.padEnd(w),
      split.padEnd(sw),
      String(m.episodes).padStart(4),
      f4(m.wcov).padStart(7),
      f4(m.ewcov).padStart(7),
      f4(m.f1).padStart(7),
      f1d(m.meanAsk).padStart(5),
      f1d(m.meanRetrieve).padStart(5),
      `${m.stopped}/${m.episodes}`.padStart(11),
    ].join(' ');
  return [head, ...rows.map(line)].join('\n');
}
