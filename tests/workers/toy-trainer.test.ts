// The synthetic trainer's GRPO step is checked against independent references: its
// gradient against central finite differences of the clipped loss (computed here from the
// formula, method §5), and the known values at ratio 1.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GrpoSchema } from '../../configs/schema.ts';
import { Rng } from '../../util/rng.ts';
import type { TrainSequence } from '../../workers/parts.ts';
import { logSoftmax, sampleToy, TOY_VOCAB, toyIndex } from '../../workers/synthetic/toy-policy.ts';
import { freshAdam, toyGrpoStep } from '../../workers/synthetic/toy-trainer.ts';

/** The 'grpo' loss (sequence mean, then batch mean) written straight from the formula. */
function referenceLoss(theta: number[], batch: TrainSequence[], eps: number, T: number): number {
  const logp = logSoftmax(theta, T);
  let total = 0;
  for (const s of batch) {
    let seq = 0;
    s.completionIds.forEach((id, t) => {
      const rho = Math.exp(logp[toyIndex(id)]! - s.oldLogprobs[t]!);
      const A = s.advantage;
      seq += -Math.min(rho * A, Math.min(Math.max(rho, 1 - eps), 1 + eps) * A);
    });
    total += seq / s.completionIds.length;
  }
  return total / batch.length;
}

function batchFrom(thetaOld: Float32Array, rng: Rng, advantages: number[]): TrainSequence[] {
  return advantages.map((advantage, trajectory) => {
    const { ids, logprobs } = sampleToy(thetaOld, 1, rng, 5);
    return { promptIds: [1], completionIds: ids, oldLogprobs: logprobs, advantage, trajectory };
  });
}

describe('toy GRPO step', () => {
  it('at ratio 1 the loss is -mean(A) and nothing is clipped', () => {
    const theta = new Float32Array(TOY_VOCAB).map((_, i) => Math.sin(i));
    const batch = batchFrom(theta, new Rng(1), [1.5, -0.5, -1, 0]);
    const stats = toyGrpoStep({ theta: new Float32Array(theta), adam: freshAdam(), batch, cfg: GrpoSchema.parse({}), temperature: 1 });
    expect(stats.loss).toBeCloseTo(-(1.5 - 0.5 - 1 + 0) / 4, 6);
    expect(stats.clip_ratio).toBe(0);
  });

  it('its gradient equals finite differences of the clipped loss (off-policy, clip active)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1_000_000 }), (seed) => {
        const rng = new Rng(seed);
        const old = new Float32Array(TOY_VOCAB).map(() => rng.normal());
        const theta = Array.from(old, (x) => x + 0.4 * rng.normal()); // current policy != sampling policy
        const batch = batchFrom(old, rng, [1, -1, 0.5, -0.25]);
        const eps = 0.2;
        // SGD with lr = 1 and no Adam would expose the raw gradient; read it from one AdamW step
        // instead: with beta1 = beta2 = 0 the first step moves by lr * g / (|g| + eps_adam).
        const cfg = GrpoSchema.parse({ epsilon: eps, adamBeta1: 0, adamBeta2: 0, adamEps: 1e-12, learningRate: 1e-3, weightDecay: 0, maxGradNorm: 1e9 });
        const t = new Float32Array(theta);
        const before = Array.from(t);
        const stats = toyGrpoStep({ theta: t, adam: freshAdam(), batch, cfg, temperature: 1 });
        let fdNormSq = 0;
        for (let j = 0; j < TOY_VOCAB; j++) {
          const h = 1e-5;
          const plus = [...before];
          const minus = [...before];
          plus[j]! += h;
          minus[j]! -= h;
          const g = (referenceLoss(plus, batch, eps, 1) - referenceLoss(minus, batch, eps, 1)) / (2 * h);
          fdNormSq += g * g;
          const step = before[j]! - t[j]!; // = 1e-3 * sign(g) where |g| is not tiny
          if (Math.abs(g) > 1e-4) expect(Math.sign(step)).toBe(Math.sign(g));
          if (Math.abs(g) < 1e-9) expect(Math.abs(step)).toBeLessThan(2e-6);
        }
        // Magnitude: the reported grad_norm is the norm of the finite-difference gradient.
        expect(stats.grad_norm).toBeCloseTo(Math.sqrt(fdNormSq), 4);
      }),
      { numRuns: 25 },
    );
  });

  it('repeated steps on a fixed preference raise the probability of the preferred tokens', () => {
    const theta = new Float32Array(TOY_VOCAB);
    const adam = freshAdam();
    const cfg = GrpoSchema.parse({ learningRate: 0.05 });
    const rng = new Rng(7);
    const pref = (logp: number[]) => logp.reduce((s, l, k) => s + (k % 4 === 0 ? Math.exp(l) : 0), 0);
    const start = pref(logSoftmax(theta, 1));
    for (let it = 0; it < 40; it++) {
      const seqs = Array.from({ length: 4 }, () => sampleToy(theta, 1, rng, 6));
      const r = seqs.map((s) => s.ids.filter((id) => toyIndex(id) % 4 === 0).length / 6);
      const m = r.reduce((a, b) => a + b) / 4;
      const sd = Math.sqrt(r.reduce((a, b) => a + (b - m) ** 2, 0) / 3) || 1;
      toyGrpoStep({
        theta,
        adam,
        cfg,
        temperature: 1,
        batch: seqs.map((s, i) => ({ promptIds: [], completionIds: s.ids, oldLogprobs: s.logprobs, advantage: (r[i]! - m) / sd, trajectory: i })),
      });
    }
    expect(pref(logSoftmax(theta, 1))).toBeGreaterThan(start + 0.2);
  });
});
