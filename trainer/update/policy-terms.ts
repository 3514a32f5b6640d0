// The clipped policy loss of method §5.4-§5.5 token by token, in numbers (method §5.13): what a
// Tinker call needs on gsteer's side of the contract. For policy token t of row b (m = 1):
//   c_bt   = the aggregation's weight: 1 / (unitTokens_b * units) (grpo), 1 / tokens (bnpo, dapo),
//            1 / (units * L) (dr_grpo); the whole batch's counts, so the rows' sums add to the loss
//   rho    = exp(logp - old)          (on-policy old = logp detached: rho = 1 in value)
//   w      = min(exp(old - rollout), tisCap)   (truncated IS; 1 when off)
//   L_bt   = c_bt * ( -min(rho A, clip(rho, 1 - eps, 1 + epsHigh) A) * w + betaKl * k3(ref, logp) )
//   dL/dlogp = c_bt * ( g_clip * w + betaKl * (1 - exp(ref - logp)) ),
//            g_clip = -rho A where the unclipped term is the min or rho is inside the clip range, else 0
// (the tie rule of tf.minimum and clipByValue's gradient, which trainer/grpo/loss.ts runs on).
import { InputError } from '../../util/errors.ts';
import type { GrpoLossOptions } from '../grpo/loss.ts';
import { lossUnits } from '../grpo/loss-units.ts';
import { ZERO_SUMS, type GrpoTokenSums } from '../grpo/stats.ts';
import type { PolicyBatch } from '../step-loss.ts';
import type { Rows } from '../step-batch.ts';

export type PolicyLossOptions = Omit<GrpoLossOptions, 'normalizer'>;

export interface PolicyTerms {
  mask: Rows; // [B][T] 1 on policy tokens
  coef: number[][]; // [B][T] c_bt (0 off the mask)
  /** [B] d loss / d (a row token's loss) as the in-process step's backward computes it in float32 (see scaledAdvantages). */
  rowGrad: number[];
  adv: number[][]; // [B][T] A of each token
  old?: Rows; // logp_old; absent = on-policy
  rollout?: Rows;
  ref?: Rows;
}

/** The per-token constants of a policy batch (the whole batch's normalizers, method §5.5). */
export function policyTerms(batch: PolicyBatch, o: PolicyLossOptions): PolicyTerms {
  const rowTokens = batch.completionMask.map((r) => r.reduce((s, x) => s + x, 0));
  const units = lossUnits(rowTokens, o.aggregation ?? 'turn', batch.trajectories);
  const tokens = rowTokens.reduce((s, n) => s + n, 0);
  const rowCoef = (b: number): number => {
    switch (o.lossType) {
      case 'grpo':
        return 1 / (Math.max(units.unitTokens[b]!, 1) * Math.max(units.units, 1));
      case 'bnpo':
      case 'dapo':
        return 1 / Math.max(tokens, 1);
      case 'dr_grpo':
        if (!(o.maxCompletionLength && o.maxCompletionLength > 0))
          throw new InputError('grpo.lossType dr_grpo needs maxCompletionLength > 0 (rollout.maxTurns x rollout.maxTokens)');
        return 1 / (units.units * o.maxCompletionLength);
      default: {
        const never: never = o.lossType;
        throw new Error(`internal: unknown lossType ${String(never)}`);
      }
    }
  };
  const f = Math.fround;
  // the chain rule of trainer/grpo/loss.ts aggregateLoss in float32: each division is one rounding
  const rowGrad = (b: number): number => {
    switch (o.lossType) {
      case 'grpo':
        return f(f(1 / Math.max(units.units, 1)) / Math.max(units.unitTokens[b]!, 1));
      case 'bnpo':
      case 'dapo':
        return f(1 / Math.max(tokens, 1));
      case 'dr_grpo':
        return f(1 / f(units.units * o.maxCompletionLength!));
    }
  };
  return {
    mask: batch.completionMask,
    coef: batch.completionMask.map((r, b) => r.map((m) => m * rowCoef(b))),
    rowGrad: batch.completionMask.map((_, b) => rowGrad(b)),
    adv: batch.completionMask.map((r, b) => r.map((_, t) => batch.tokenAdvantages?.[b]![t]! ?? batch.advantages[b]!)),
    ...(batch.oldLogprobs ? { old: batch.oldLogprobs } : {}),
    ...(batch.rolloutLogprobs ? { rollout: batch.rolloutLogprobs } : {}),
    ...(batch.refLogprobs ? { ref: batch.refLogprobs } : {}),
  };
}

const clip = (x: number, lo: number, hi: number) => Math.min(Math.max(x, lo), hi);
/** Schulman's k3 of KL(pi || ref) at one token: exp(r) - r - 1, r = ref - logp. */
const k3 = (ref: number, logp: number) => Math.exp(ref - logp) - (ref - logp) - 1;

/** Each quantity of one token, given its logp (undefined: not needed, the old logprob decides). */
function token(x: PolicyTerms, o: PolicyLossOptions, b: number, t: number, logp: number) {
  const lo = 1 - o.epsilon;
  const hi = 1 + (o.epsilonHigh ?? o.epsilon);
  const old = x.old ? x.old[b]![t]! : logp;
  const rho = Math.exp(logp - old);
  const A = x.adv[b]![t]!;
  const w = o.tisCap !== null ? Math.min(Math.exp(old - x.rollout![b]![t]!), o.tisCap) : 1;
  const surr = Math.min(rho * A, clip(rho, lo, hi) * A);
  const gClip = rho * A <= clip(rho, lo, hi) * A || (rho >= lo && rho <= hi) ? -rho * A : 0;
  const ref = o.betaKl > 0 ? x.ref![b]![t]! : logp;
  return { rho, A, w, old, lo, hi, loss: -surr * w + o.betaKl * k3(ref, logp), grad: gClip * w + o.betaKl * (1 - Math.exp(ref - logp)) };
}

function check(x: PolicyTerms, o: PolicyLossOptions): void {
  if (o.tisCap !== null && !x.rollout)
    throw new InputError(`train batch: grpo.tisCap is ${o.tisCap} but the batch has no rolloutLogprobs; keep the server's logprobs or set grpo.tisCap=null`);
  if (o.betaKl > 0 && !x.ref)
    throw new InputError(`train batch: grpo.betaKl is ${o.betaKl} but the batch has no refLogprobs; score it under the reference first or set grpo.betaKl=0`);
}

/**
 * The per-token advantage a built-in loss gets, A' = c w A, rounded as the in-process step's backward
 * rounds d loss / d rho (float32: 1/units, then /unitTokens, then x w, then x A), so that Tinker's
 * d(-A' r)/d r = -A' is the same float as trainStep's and the two gradients are the same bits (TIS
 * aside: its weight comes from the backend's exp). `w` = fixedTisWeights.
 */
export function scaledAdvantages(x: PolicyTerms, w: Rows): number[][] {
  const f = Math.fround;
  return x.mask.map((r, b) => r.map((m, t) => (m ? f((w[b]![t] === 1 ? x.rowGrad[b]! : f(x.rowGrad[b]! * f(w[b]![t]!))) * f(x.adv[b]![t]!)) : 0)));
}

/** dL/dlogp [B][T] at the current logprobs (0 off the mask): the weights of the linear surrogate are its negative. */
export function lossGradient(x: PolicyTerms, o: PolicyLossOptions, logp: Rows): number[][] {
  check(x, o);
  return x.mask.map((r, b) => r.map((m, t) => (m ? x.coef[b]![t]! * token(x, o, b, t, logp[b]![t]!).grad : 0)));
}

/** The TIS weight per token when it does not depend on the current logprobs (off-policy), else null. */
export function fixedTisWeights(x: PolicyTerms, o: PolicyLossOptions): number[][] | null {
  if (o.tisCap === null) return x.mask.map((r) => r.map(() => 1));
  if (!x.old) return null;
  check(x, o);
  return x.mask.map((r, b) => r.map((m, t) => (m ? Math.min(Math.exp(x.old![b]![t]! - x.rollout![b]![t]!), o.tisCap!) : 0)));
}

/** The loss (sum of c_bt L_bt) and the diagnostics' token sums (trainer/grpo/stats.ts) at the current logprobs. */
export function policyLoss(x: PolicyTerms, o: PolicyLossOptions, logp: Rows, entropy?: Rows): { loss: number; sums: GrpoTokenSums } {
  check(x, o);
  let loss = 0;
  const s = { ...ZERO_SUMS };
  x.mask.forEach((r, b) =>
    r.forEach((m, t) => {
      if (!m) return;
      const lp = logp[b]![t]!;
      const k = token(x, o, b, t, lp);
      loss += x.coef[b]![t]! * k.loss;
      s.tokens += 1;
      if (k.rho < k.lo && k.A < 0) s.lowClipped += 1;
      if (k.rho > k.hi && k.A > 0) s.highClipped += 1;
      s.approxKl += k3(k.old, lp);
      if (x.ref) s.kl += k3(x.ref[b]![t]!, lp);
      if (entropy) s.entropy += entropy[b]![t]!;
      if (x.rollout) {
        const d = lp - x.rollout[b]![t]!;
        s.samplingRatio += Math.exp(d);
        s.samplingDiffMax = Math.max(s.samplingDiffMax, Math.abs(d));
      }
    }),
  );
  return { loss, sums: s };
}
