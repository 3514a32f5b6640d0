// Terminal curves for `gsteer monitor RUN_DIR`: one sparkline per main metric (eight block
// heights), with min / last / max, fitted to the terminal width. Pure: records -> text.
import type { MetricsRecord } from './sink.ts';
import { mean } from '../util/stats.ts';

const BLOCKS = '▁▂▃▄▅▆▇█';

/**
 * One character per value, or per bucket of consecutive values (their mean) when there are
 * more values than `width`. Heights scale from the series' min (▁) to its max (█); a flat
 * series is drawn mid-height (▄); a bucket with no value is a space.
 */
export function sparkline(values: readonly (number | undefined)[], width: number): string {
  const n = values.length;
  const cols = Math.min(n, Math.max(1, Math.floor(width)));
  const cells: (number | undefined)[] = Array.from({ length: cols }, (_, k) => {
    const xs = values.slice(Math.floor((k * n) / cols), Math.floor(((k + 1) * n) / cols)).filter((v): v is number => v !== undefined);
    return xs.length ? mean(xs) : undefined;
  });
  const defined = cells.filter((v): v is number => v !== undefined);
  const lo = Math.min(...defined);
  const hi = Math.max(...defined);
  return cells.map((v) => (v === undefined ? ' ' : BLOCKS[hi > lo ? Math.round(((v - lo) / (hi - lo)) * 7) : 3])).join('');
}

/** Four significant digits in at most 8 characters. */
export function fmtStat(v: number): string {
  if (v === 0) return '0';
  const a = Math.abs(v);
  return a >= 1e5 || a < 1e-3 ? v.toExponential(2) : String(Number(v.toPrecision(4)));
}

/** The curves a reader checks first (method §5 / TRL names), reward components in name order. */
export function mainCurves(records: readonly MetricsRecord[]): string[] {
  const keys = new Set(records.flatMap((r) => Object.keys(r).filter((k) => typeof r[k] === 'number')));
  const components = [...keys].filter((k) => k.startsWith('rewards/') && k.endsWith('/mean')).sort();
  return ['reward', ...components, 'frac_reward_zero_std', 'invalid_rate', 'entropy', 'grad_norm', 'completions/mean_length'].filter((k) => keys.has(k));
}

const STAT = 8;

/** A title, a header and one line per curve, each at most `columns` wide (the sparkline takes what is left). */
export function curvesPanel(records: readonly MetricsRecord[], columns: number): string {
  const curves = mainCurves(records);
  if (curves.length === 0) return '(no curves recorded)';
  const label = Math.max(5, ...curves.map((c) => c.length));
  const spark = Math.min(records.length, Math.max(8, columns - label - 2 - 3 * (STAT + 1)));
  const per = records.length / spark;
  const row = (name: string, line: string, stats: string[]) =>
    `${name.padEnd(label)}  ${line.padEnd(spark)}${stats.map((s) => ` ${s.padStart(STAT)}`).join('')}`;
  const lines = [
    `curves over ${records.length} update(s), ${per === 1 ? 'one per column' : `${per.toFixed(1)} per column (mean)`}`,
    row('curve', '', ['min', 'last', 'max']),
  ];
  for (const c of curves) {
    const values = records.map((r) => (typeof r[c] === 'number' ? (r[c] as number) : undefined));
    const xs = values.filter((v): v is number => v !== undefined);
    lines.push(row(c, sparkline(values, spark), [fmtStat(Math.min(...xs)), fmtStat(xs.at(-1) as number), fmtStat(Math.max(...xs))]));
  }
  return lines.join('\n');
}
