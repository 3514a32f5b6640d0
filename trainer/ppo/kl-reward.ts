// Per-token rewards with the KL penalty to the reference policy folded in (the QREF paper, method §13.3:
// "KL regularization is applied through the reward, while an additional actor KL loss is
// disabled"), as verl's apply_kl_penalty and the reward manager build them:
//   kl_t     = KL estimate at token t between the rollout policy and the reference (SFT) policy
//   r_t      = -beta * kl_t * m_t  +  [t = last generated token] * score
// so the sequence reward (the QREF reward, the environment's reward.ts) sits on the last response
// token (verl: reward_tensor[i, valid_response_length - 1] = score) and every generated token
// pays its own KL. Estimators (Schulman, "Approximating KL divergence", 2020), with
// logr = log pi_ref(y_t) - log pi(y_t):
//   k1 = -logr = log pi - log pi_ref                 (verl "kl"; unbiased, can be negative)
//   k3 = exp(logr) - logr - 1                         (verl "low_var_kl"; >= 0, low variance)
// k3 keeps verl's numerical guards: logr clamped to [-20, 20] and k3 to [-10, 10].
import type { KlEstimator } from '../../configs/ppo.ts';
import { assertShapes, type Matrix } from './masked.ts';

export function klPenalty(logp: number, refLogp: number, estimator: KlEstimator): number {
  switch (estimator) {
    case 'k1':
      return logp - refLogp;
    case 'k3': {
      const logr = Math.min(20, Math.max(-20, refLogp - logp));
      return Math.min(10, Math.max(-10, Math.exp(logr) - logr - 1));
    }
    default: {
      const never: never = estimator;
      throw new Error(`internal: unknown KL estimator ${String(never)}`);
    }
  }
}

/** Index of the last 1 in a mask row (the last generated token); throws on an empty row. */
export function lastMaskedIndex(row: readonly number[]): number {
  for (let t = row.length - 1; t >= 0; t--) if (row[t]) return t;
  throw new Error('internal: a response with no generated token');
}

export interface TokenRewards {
  rewards: Matrix; // [B, T] r_t, 0 off the mask
  kl: Matrix; // [B, T] kl_t * m_t
  /** verl actor/reward_kl_penalty: mean over sequences of each sequence's masked-mean kl. */
  klMean: number;
  klCoef: number;
}

export function tokenLevelRewards(
  scores: readonly number[] /* [B] sequence rewards */,
  logp: Matrix /* [B, T] rollout policy log-probs of the sampled tokens */,
  refLogp: Matrix /* [B, T] reference policy log-probs of the same tokens */,
  mask: Matrix /* [B, T] */,
  klCoef: number,
  estimator: KlEstimator,
): TokenRewards {
  assertShapes(mask, logp, refLogp);
  if (scores.length !== mask.length) throw new Error(`internal: ${scores.length} scores for ${mask.length} sequences`);
  const kl = logp.map((row, i) => row.map((lp, t) => ((mask[i] as number[])[t] ? klPenalty(lp, (refLogp[i] as number[])[t] as number, estimator) : 0)));
  const rewards = kl.map((row, i) => {
    const r = row.map((k) => -klCoef * k);
    const last = lastMaskedIndex(mask[i] as number[]);
    r[last] = (r[last] as number) + (scores[i] as number);
    return r;
  });
  const perSeq = kl.map((row, i) => {
    const m = mask[i] as number[];
    const n = m.reduce((a, b) => a + b, 0);
    return row.reduce((a, b) => a + b, 0) / n;
  });
  return { rewards, kl, klMean: perSeq.reduce((a, b) => a + b, 0) / perSeq.length, klCoef };
}
