// GRPO (every lossType, aggregation, clip, TIS, KL) and PPO's actor update as Tinker loss inputs
// (method §5.13). The aggregation weight c_bt, the TIS weight w and the advantage go into one
// per-token advantage, so Tinker's SUM over tokens is gsteer's loss:
//   off-policy, betaKl = 0   `ppo`, logprobs = logp_old, advantages = A c w,
//                            clip_low/high_threshold = 1 - eps, 1 + epsHigh        (one call)
//   on-policy, no TIS, no KL `cross_entropy`, weights = A c: at rho = 1 (logp_old = logp detached)
//                            dL/dlogp = -A c exactly, so the linear surrogate needs no forward
//   anything else            the linear surrogate of forward_backward_custom: `forward` for logp,
//                            dL/dlogp in TypeScript (policy-terms.ts), `cross_entropy` with
//                            weights = -dL/dlogp (two calls: the on-policy TIS weight and the k3 KL
//                            gradient depend on logp's value, which no built-in loss reads twice)
// Every datum asks for its completion's logprobs (gsteer `scored`) and carries the constraint its
// completion was sampled under, so the engine scores under the same masks (method §5.6).
import type { EngineDatum, TinkerLossFn } from '../engine/types.ts';
import type { PolicyBatch } from '../step-loss.ts';
import type { Rows } from '../step-batch.ts';
import { firstColumn, rowDatum } from './datums.ts';
import { fixedTisWeights, lossGradient, policyTerms, scaledAdvantages, type PolicyLossOptions, type PolicyTerms } from './policy-terms.ts';

export interface PlannedCall {
  lossFn: TinkerLossFn;
  config?: Record<string, number>;
  data: EngineDatum[];
}

export type PolicyPlan =
  | { kind: 'builtin'; call: PlannedCall }
  /** forward `forward`, then the backward built from its logprobs [B][T] (columns). */
  | { kind: 'surrogate'; forward: PlannedCall; backward: (logp: Rows) => PlannedCall };

const mul = (a: Rows, b: Rows) => a.map((r, i) => r.map((x, t) => x * b[i]![t]!));

/** The datums of a policy batch with the given per-column loss inputs. */
export function policyDatums(batch: PolicyBatch, inputs: Record<string, Rows>): EngineDatum[] {
  return batch.inputIds.map((ids, b) => {
    const mask = batch.completionMask[b]!;
    const spec = batch.constraints?.[b] ?? null;
    const first = firstColumn(mask);
    return rowDatum({
      ids,
      inputs: Object.fromEntries(Object.entries(inputs).map(([k, v]) => [k, v[b]!])),
      scored: mask,
      constraint: spec && first > 0 ? { spec, firstColumn: first } : null,
    });
  });
}

export function policyPlan(batch: PolicyBatch, o: PolicyLossOptions): PolicyPlan {
  const x = policyTerms(batch, o);
  const tis = fixedTisWeights(x, o);
  if (o.betaKl === 0 && tis && x.old) {
    const config = { clip_low_threshold: 1 - o.epsilon, clip_high_threshold: 1 + (o.epsilonHigh ?? o.epsilon) };
    return { kind: 'builtin', call: { lossFn: 'ppo', config, data: policyDatums(batch, { logprobs: x.old, advantages: scaledAdvantages(x, tis) }) } };
  }
  if (o.betaKl === 0 && tis) return { kind: 'builtin', call: { lossFn: 'cross_entropy', data: policyDatums(batch, { weights: scaledAdvantages(x, tis) }) } };
  return surrogate(batch, x, o, o.betaKl > 0 ? x.coef : mul(x.adv, x.coef));
}

/**
 * `active`: nonzero exactly where the backward's weights will be (the KL term reaches every policy
 * token, the clip term only those with A != 0), so the engine scores both calls in the same
 * micro-batch layouts (dropout, prefix trees) and the forward's logp is the backward's.
 */
function surrogate(batch: PolicyBatch, x: PolicyTerms, o: PolicyLossOptions, active: Rows): PolicyPlan {
  return {
    kind: 'surrogate',
    forward: { lossFn: 'cross_entropy', data: policyDatums(batch, { weights: active }) },
    backward: (logp) => ({ lossFn: 'cross_entropy', data: policyDatums(batch, { weights: lossGradient(x, o, logp).map((r) => r.map((g) => -g)) }) }),
  };
}
