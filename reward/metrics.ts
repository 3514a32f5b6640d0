// method §5 metrics: the mean and std of the reward and of every component over the
// trajectories of one update, named as TRL logs per-reward-function values
// (`rewards/<name>/mean`, `rewards/<name>/std`), plus the invalid and non-stop rates.
import type { RewardBreakdown } from './types.ts';

export const COMPONENTS = ['reward', 'r_align', 'coverage', 'c_fp', 'c_acq', 'c_con', 'n_rep', 'n_multi', 't_ask', 't_ret', 'penalty_invalid', 'penalty_nonstop'] as const;

/** Population std here: a logged spread of this batch, not an estimator (advantages use n - 1). */
function meanStd(xs: number[]): [number, number] {
  const m = xs.reduce((a, b) => a + b, 0) / xs.length;
  return [m, Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / xs.length)];
}

export function rewardMetrics(batch: RewardBreakdown[]): Record<string, number> {
  if (batch.length === 0) return {};
  const out: Record<string, number> = {};
  for (const c of COMPONENTS) {
    const [m, s] = meanStd(batch.map((b) => b[c]));
    out[`rewards/${c}/mean`] = m;
    out[`rewards/${c}/std`] = s;
  }
  out.invalid_rate = batch.filter((b) => b.penalty_invalid > 0).length / batch.length;
  out.nonstop_rate = batch.filter((b) => b.penalty_nonstop > 0).length / batch.length;
  return out;
}
