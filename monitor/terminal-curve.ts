// Reward curves drawn in the terminal (asciichart): the total reward per update, then one
// small chart per reward component (method §4: every component reported separately), so a
// run's end shows what moved without opening the dashboard.
import { plot } from 'asciichart';
import { pooledWindows, type CriticVariances } from './explained-variance.ts';
import type { MetricsRecord } from './sink.ts';
import { mean } from '../util/stats.ts';

/** The components worth a chart, in method §4 order (count-like fields such as n_targets are left out). */
export const CURVE_COMPONENTS = ['coverage', 'c_fp', 'c_acq', 'c_con', 'penalty_nonstop', 'penalty_invalid'] as const;

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/**
 * [n] -> about `width` columns: a long series averages runs of points into one column, a
 * short one repeats each point floor(width / n) times so the chart spans the width.
 */
export function resample(xs: readonly number[], width: number): number[] {
  if (xs.length <= width) return xs.flatMap((x) => new Array<number>(Math.max(1, Math.floor(width / xs.length))).fill(x));
  const out: number[] = [];
  for (let c = 0; c < width; c++) {
    const lo = Math.floor((c * xs.length) / width);
    const hi = Math.floor(((c + 1) * xs.length) / width);
    const part = xs.slice(lo, Math.max(hi, lo + 1));
    out.push(mean(part));
  }
  return out;
}

function chart(title: string, ys: number[], height: number, width: number): string {
  const pts = resample(ys, width);
  const flat = Math.max(...pts) - Math.min(...pts) < 1e-12;
  const body = plot(pts, { height: flat ? 1 : height, format: (x) => x.toFixed(3).padStart(8) });
  return `${title}\n${body}`;
}

/** The charts as text; `width` = columns for the points (the axis labels take 10 more). */
export function rewardCurves(records: readonly MetricsRecord[], width = 60): string {
  const series = (key: string) => records.map((r) => num(r[key])).filter((v): v is number => v !== null);
  const total = series('reward');
  if (total.length < 2) return `reward curve: ${total.length} update(s), nothing to draw yet`;
  const per = total.length > width ? ` (${width} columns, each the mean of ~${(total.length / width).toFixed(1)} updates)` : '';
  const parts = [chart(`reward per update, updates 1-${total.length}${per}`, total, 10, width)];
  for (const c of CURVE_COMPONENTS) {
    const ys = series(`rewards/${c}/mean`);
    if (ys.length === total.length) parts.push(chart(`rewards/${c}/mean`, ys, 3, width));
  }
  return parts.join('\n\n');
}

/** One small chart per metric key that every record has (e.g. PPO's critic/vf_loss, critic/vf_explained_var); keys some records lack are left out. */
export function metricCurves(records: readonly MetricsRecord[], keys: readonly string[], width = 60): string {
  const parts: string[] = [];
  for (const k of keys) {
    const ys = records.map((r) => num(r[k])).filter((v): v is number => v !== null);
    if (ys.length >= 2 && ys.length === records.length) parts.push(chart(`${k} per update, updates 1-${ys.length}`, ys, 3, width));
  }
  return parts.join('\n\n');
}

/** The critic's explained variance pooled over each window of w updates (monitor/explained-variance.ts): one update's -1000 does not flatten the rest. */
export function explainedVarianceCurve(us: readonly CriticVariances[], w: number, width = 60): string {
  const ys = pooledWindows(us, w).filter((v): v is number => v !== null);
  if (ys.length < 2) return `critic explained variance pooled over ${w} updates: too few updates to draw`;
  return chart(`critic explained variance pooled over each ${w} consecutive updates, windows ending at updates ${w}-${us.length}`, ys, 3, width);
}
