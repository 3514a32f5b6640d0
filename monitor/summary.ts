// The end-of-run table: first, a few evenly spaced, and the last update, with the reward
// components a reader checks first.
import type { MetricsRecord } from './sink.ts';

const COLUMNS: [string, string][] = [
  ['step', 'step'],
  ['reward', 'reward'],
  ['reward_std', 'reward_std'],
  ['frac_reward_zero_std', 'zero_std'],
  ['loss', 'loss'],
  ['grad_norm', 'grad_norm'],
  ['entropy', 'entropy'],
  ['turns/ask', 'ask'],
  ['turns/retrieve', 'retrieve'],
  ['invalid_rate', 'invalid'],
  ['policy_lag', 'lag'],
];

function cell(v: number | string | undefined): string {
  if (v === undefined) return '-';
  if (typeof v === 'string') return v;
  return Number.isInteger(v) ? String(v) : v.toFixed(4);
}

export function summaryTable(records: readonly MetricsRecord[], maxRows = 10): string {
  if (records.length === 0) return '(no updates recorded)';
  const pick =
    records.length <= maxRows
      ? [...records]
      : Array.from({ length: maxRows }, (_, k) => records[Math.round((k * (records.length - 1)) / (maxRows - 1))] as MetricsRecord);
  const rows = [COLUMNS.map(([, h]) => h), ...pick.map((r) => COLUMNS.map(([k]) => cell(r[k])))];
  const widths = COLUMNS.map((_, c) => Math.max(...rows.map((r) => (r[c] as string).length)));
  const line = (r: string[]) => r.map((x, c) => x.padStart(widths[c] as number)).join('  ');
  return [line(rows[0] as string[]), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n');
}
