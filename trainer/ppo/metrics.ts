// Critic metrics as verl reports them (verl/trainer/ppo/metric_utils.py compute_data_metrics,
// names in comments): over the generated tokens of the batch.
//   vf_explained_var = 1 - Var(G - V) / (Var(G) + 1e-5)     (Var unbiased, as torch.var)
// 1 = the critic predicts the returns; 0 = no better than their mean; negative = worse.
// Its two variances are reported too (critic/returns_var = Var(G), critic/residual_var =
// Var(G - V)): on a batch of a few episodes with (nearly) equal returns Var(G) ~ 0 and the
// ratio explodes, so a trend over updates pools them (monitor/explained-variance.ts).
import { mean, sampleVariance } from '../../util/stats.ts';
import { assertShapes, type Matrix } from './masked.ts';

const EV_EPS = 1e-5;

function masked(values: Matrix, mask: Matrix): number[] {
  return values.flatMap((row, i) => row.filter((_, t) => (mask[i] as number[])[t]));
}

function unbiasedVar(xs: readonly number[]): number {
  if (xs.length < 2) throw new Error('internal: a variance needs at least two tokens');
  return sampleVariance(xs);
}

/** Var(G) and Var(G - V) over the generated tokens (unbiased), the parts of the explained variance. */
export function criticVariances(
  returns: Matrix /* [B, T] */,
  values: Matrix /* [B, T] */,
  mask: Matrix /* [B, T] */,
): { returns_var: number; residual_var: number } {
  assertShapes(mask, returns, values);
  const g = masked(returns, mask); // [N] N = generated tokens
  const v = masked(values, mask); // [N]
  return { returns_var: unbiasedVar(g), residual_var: unbiasedVar(g.map((x, k) => x - (v[k] as number))) };
}

const ratio = ({ returns_var, residual_var }: { returns_var: number; residual_var: number }) => 1 - residual_var / (returns_var + EV_EPS);

export function explainedVariance(returns: Matrix /* [B, T] */, values: Matrix /* [B, T] */, mask: Matrix /* [B, T] */): number {
  return ratio(criticVariances(returns, values, mask));
}

export interface CriticMetrics {
  vf_explained_var: number; // critic/vf_explained_var
  returns_var: number; // critic/returns_var: Var(G)
  residual_var: number; // critic/residual_var: Var(G - V)
  returns_mean: number; // critic/returns/mean
  returns_max: number;
  returns_min: number;
  values_mean: number; // critic/values/mean
  values_max: number;
  values_min: number;
  advantages_mean: number; // critic/advantages/mean
  advantages_max: number;
  advantages_min: number;
}

export function criticMetrics(returns: Matrix, values: Matrix, advantages: Matrix, mask: Matrix): CriticMetrics {
  assertShapes(mask, returns, values, advantages);
  const stat = (xs: number[]) => ({ mean: mean(xs), max: Math.max(...xs), min: Math.min(...xs) });
  const g = stat(masked(returns, mask));
  const v = stat(masked(values, mask));
  const a = stat(masked(advantages, mask));
  const vars = criticVariances(returns, values, mask);
  return {
    vf_explained_var: ratio(vars),
    ...vars,
    returns_mean: g.mean,
    returns_max: g.max,
    returns_min: g.min,
    values_mean: v.mean,
    values_max: v.max,
    values_min: v.min,
    advantages_mean: a.mean,
    advantages_max: a.max,
    advantages_min: a.min,
  };
}
