// One line per update for `gsteer monitor --follow`: the numbers a reader watches live.
import type { MetricsRecord } from './sink.ts';

const num = (v: unknown, d = 4) => (typeof v === 'number' ? v.toFixed(d) : '-');

export function followLine(r: MetricsRecord): string {
  const components = Object.keys(r)
    .filter((k) => k.startsWith('rewards/') && k.endsWith('/mean'))
    .map((k) => `${k.slice(8, -5)} ${num(r[k], 3)}`)
    .join(' ');
  return `step ${r.step} reward ${num(r.reward)} (std ${num(r.reward_std)}) loss ${num(r.loss)} grad_norm ${num(r.grad_norm)} lag ${r.policy_lag ?? '-'} | ${components}`;
}
