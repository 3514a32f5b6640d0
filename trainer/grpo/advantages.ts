// method §5: group-relative advantages.
//   A_gi = (R_gi - mean_g(R)) / (std + eps)
// with std chosen by `scaling` (TRL `scale_rewards`):
//   group: the std of the group's G rewards (GRPO, the paper)
//   batch: the std of all numGroups * G rewards of the update (TRL "batch")
//   none:  no division (Dr. GRPO), A = R - mean_g(R)
// The mean is always the group mean. std is the sample std (Bessel, n - 1) as torch.std in
// TRL computes it. A group whose rewards are all equal (std below TRL's isclose tolerance)
// gives exactly A = 0 and is counted in frac_reward_zero_std; it carries no gradient.

import { mean, sampleStd } from '../../util/stats.ts';

export type AdvantageScaling = 'group' | 'batch' | 'none';

/** torch.isclose(std, 0) default atol, which TRL uses to flag zero-std groups. */
export const ZERO_STD_ATOL = 1e-8;

export interface AdvantageStats {
  reward_mean: number;
  /** Mean over groups of the within-group std (TRL `reward_std`). */
  reward_std: number;
  frac_reward_zero_std: number;
  advantage_mean: number;
  advantage_std: number;
  advantage_min: number;
  advantage_max: number;
}

export interface GroupAdvantages {
  advantages: number[][]; // [numGroups, G]
  stats: AdvantageStats;
}

export function groupAdvantages(rewards: number[][] /* [numGroups, G] */, scaling: AdvantageScaling, eps: number): GroupAdvantages {
  if (rewards.length === 0) throw new Error('internal: groupAdvantages needs at least one group');
  for (const g of rewards) {
    if (g.length === 0) throw new Error('internal: an empty reward group');
    for (const r of g) if (!Number.isFinite(r)) throw new Error(`internal: reward ${r} is not finite`);
  }
  const flat = rewards.flat(); // [numGroups * G]
  const groupStd = rewards.map(sampleStd); // [numGroups]
  const batchStd = sampleStd(flat);
  const advantages = rewards.map((g, k) => {
    if ((groupStd[k] as number) < ZERO_STD_ATOL) return g.map(() => 0);
    const m = mean(g);
    const denom = scaleOf(scaling, groupStd[k] as number, batchStd, eps);
    return g.map((r) => (r - m) / denom);
  });
  const flatA = advantages.flat();
  return {
    advantages,
    stats: {
      reward_mean: mean(flat),
      reward_std: mean(groupStd),
      frac_reward_zero_std: groupStd.filter((s) => s < ZERO_STD_ATOL).length / rewards.length,
      advantage_mean: mean(flatA),
      advantage_std: sampleStd(flatA),
      advantage_min: Math.min(...flatA),
      advantage_max: Math.max(...flatA),
    },
  };
}

function scaleOf(scaling: AdvantageScaling, groupStd: number, batchStd: number, eps: number): number {
  switch (scaling) {
    case 'group':
      return groupStd + eps;
    case 'batch':
      return batchStd + eps;
    case 'none':
      return 1;
  }
}
