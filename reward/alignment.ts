// method §4, target-anchored alignment: R_align = alpha * Cov - beta * C_FP.
//   S_ij    = max(0, phi(g_i) . phi(v_j))      [N, M], M = covered final slots
//   M*      = max-weight one-to-one matching of S (reward/hungarian.ts)
//   s_i     = S_ij if i is matched to j, else 0                        [N]
//   s_hat_j = S_ij if j is matched, else 0                             [M]
//   Cov     = (1/N) sum_i s_i       or  sum_i w_i s_i / sum_i w_i (rubric)
//   C_FP    = (1/N) sum_j (1 - s_hat_j)
import { targetText, type Target } from '../data/schema.ts';
import type { EvidenceSlot } from '../core/types.ts';
import type { RewardConfig } from '../configs/schema.ts';
import { InputError } from '../util/errors.ts';
import { cosine, type Encoder } from '../core/encoder.ts';
import { maxWeightMatching } from './hungarian.ts';
import type { MatchedPair } from './types.ts';

/** v_j text (method §4): slot name + purpose. */
export function slotText(slot: EvidenceSlot): string {
  return slot.purpose ? `${slot.name} ${slot.purpose}` : slot.name;
}

/** S [N][M] from unit embeddings of targets [N] and slots [M]. */
export function similarityMatrix(g: Float32Array[], v: Float32Array[]): number[][] {
  return g.map((gi) => v.map((vj) => Math.max(0, cosine(gi, vj))));
}

export interface Alignment {
  coverage: number;
  c_fp: number;
  r_align: number;
  matches: MatchedPair[];
}

export function coverageOf(s: number[], targets: Target[], weighting: RewardConfig['coverageWeighting'], where: string): number {
  const n = targets.length;
  switch (weighting) {
    case 'uniform':
      return s.reduce((a, b) => a + b, 0) / n;
    case 'rubric': {
      const wsum = targets.reduce((a, t) => a + t.weight, 0);
      if (!(wsum > 0))
        throw new InputError(
          `${where}: reward.coverageWeighting is "rubric" but the target weights sum to ${wsum}; give the targets positive weights or use reward.coverageWeighting=uniform`,
        );
      return targets.reduce((a, t, i) => a + t.weight * (s[i] as number), 0) / wsum;
    }
  }
}

/** Pure given S: the matching and the alignment terms. */
export function alignFromSimilarity(S: number[][], targets: Target[], covered: EvidenceSlot[], cfg: RewardConfig, where = 'reward'): Alignment {
  const n = targets.length;
  const s = new Array<number>(n).fill(0); // [N]
  const sHat = new Array<number>(covered.length).fill(0); // [M]
  const matches: MatchedPair[] = [];
  for (const [i, j] of maxWeightMatching(S).pairs) {
    const sij = (S[i] as number[])[j] as number;
    s[i] = sij;
    sHat[j] = sij;
    // A zero-similarity pair changes no term; reporting it would suggest a match that is not there.
    if (sij > 0) matches.push({ targetId: (targets[i] as Target).id, slotName: (covered[j] as EvidenceSlot).name, similarity: sij });
  }
  const coverage = coverageOf(s, targets, cfg.coverageWeighting, where);
  const c_fp = sHat.reduce((a, x) => a + (1 - x), 0) / n;
  return { coverage, c_fp, r_align: cfg.alpha * coverage - cfg.beta * c_fp, matches };
}

export async function alignment(targets: Target[], finalSlots: EvidenceSlot[], cfg: RewardConfig, encoder: Encoder, where = 'reward'): Promise<Alignment> {
  const covered = finalSlots.filter((x) => x.status === 'covered');
  if (covered.length === 0) return alignFromSimilarity([], targets, covered, cfg, where);
  const vecs = await encoder.embed([...targets.map(targetText), ...covered.map(slotText)]);
  const S = similarityMatrix(vecs.slice(0, targets.length), vecs.slice(targets.length)); // [N, M]
  return alignFromSimilarity(S, targets, covered, cfg, where);
}
