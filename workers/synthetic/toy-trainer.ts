// GRPO on the toy policy (method §5), exactly, in float64 with analytic gradients:
//   rho_t = exp(logp_theta(y_t) - logp_old(y_t))
//   l_t   = -min(rho_t A, clip(rho_t, 1 - eps, 1 + eps_high) A)
//   loss  = aggregate(l) by lossType;  dl_t/dtheta = -A rho_t dlogp/dtheta when unclipped, else 0
//   dlogp(y)/dtheta_j = (1[j = y] - p_j) / T
// then global-norm clipping and AdamW. Parameters are rounded to float32 after each step so
// the file on disk is the whole state (byte-identical resume).
import type { GrpoConfig } from '../../configs/schema.ts';
import type { TrainStats } from '../payloads.ts';
import type { TrainSequence } from '../parts.ts';
import type { AdamState } from './toy-adapter.ts';
import { entropy, logSoftmax, TOY_VOCAB, toyIndex } from './toy-policy.ts';

export interface ToyStepInput {
  theta: Float32Array; // [V], updated in place
  adam: AdamState; // updated in place
  batch: TrainSequence[];
  cfg: GrpoConfig;
  temperature: number;
}

/** Per-sequence token weights of the loss aggregation (TRL loss_type). */
function tokenWeight(lossType: GrpoConfig['lossType'], seqLen: number, totalTokens: number, numSeqs: number, maxLen: number): number {
  switch (lossType) {
    case 'grpo':
      return 1 / (seqLen * numSeqs); // mean over the sequence, then over sequences
    case 'bnpo':
    case 'dapo':
      return 1 / totalTokens; // token mean over the batch
    case 'dr_grpo':
      return 1 / (numSeqs * maxLen); // constant normalizer
  }
}

export function toyGrpoStep(x: ToyStepInput): TrainStats {
  const t0 = performance.now();
  const { cfg, temperature: T } = x;
  const epsHigh = cfg.epsilonHigh ?? cfg.epsilon;
  const logp = logSoftmax(x.theta, T); // [V]
  const p = logp.map(Math.exp);
  const grad = new Float64Array(TOY_VOCAB);
  const seqs = x.batch.filter((s) => s.completionIds.length > 0);
  const total = seqs.reduce((n, s) => n + s.completionIds.length, 0);
  const maxLen = Math.max(1, ...seqs.map((s) => s.completionIds.length));
  let loss = 0;
  let clipped = 0;
  for (const s of seqs) {
    const w = tokenWeight(cfg.lossType, s.completionIds.length, total, seqs.length, maxLen);
    s.completionIds.forEach((id, t) => {
      const k = toyIndex(id);
      const rho = Math.exp((logp[k] as number) - (s.oldLogprobs[t] as number));
      const A = s.advantage;
      const clip = Math.min(Math.max(rho, 1 - cfg.epsilon), 1 + epsHigh);
      const unclippedWins = rho * A <= clip * A;
      loss += -w * Math.min(rho * A, clip * A);
      if (!unclippedWins) clipped++;
      else for (let j = 0; j < TOY_VOCAB; j++) grad[j]! += (-w * A * rho * ((j === k ? 1 : 0) - (p[j] as number))) / T;
    });
  }
  // Global-norm clipping (TRL max_grad_norm).
  const gradNorm = Math.sqrt(grad.reduce((s, g) => s + g * g, 0));
  const scale = gradNorm > cfg.maxGradNorm ? cfg.maxGradNorm / gradNorm : 1;
  // AdamW (decoupled weight decay).
  const a = x.adam;
  a.t += 1;
  for (let j = 0; j < TOY_VOCAB; j++) {
    const g = grad[j]! * scale;
    a.m[j] = cfg.adamBeta1 * a.m[j]! + (1 - cfg.adamBeta1) * g;
    a.v[j] = cfg.adamBeta2 * a.v[j]! + (1 - cfg.adamBeta2) * g * g;
    const mHat = a.m[j]! / (1 - cfg.adamBeta1 ** a.t);
    const vHat = a.v[j]! / (1 - cfg.adamBeta2 ** a.t);
    const th = x.theta[j]!;
    x.theta[j] = th - cfg.learningRate * (mHat / (Math.sqrt(vHat) + cfg.adamEps) + cfg.weightDecay * th);
  }
  return {
    loss,
    clip_ratio: total ? clipped / total : 0,
    grad_norm: gradNorm,
    entropy: entropy(logp),
    num_tokens: total,
    train_seconds: (performance.now() - t0) / 1000,
  };
}

export const freshAdam = (): AdamState => ({ t: 0, m: new Array(TOY_VOCAB).fill(0), v: new Array(TOY_VOCAB).fill(0) });
